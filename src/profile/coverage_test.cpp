#include <gtest/gtest.h>

#include "core/error.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

OpRecord node(const std::string& op, const std::string& backend, bool no_compute = false) {
    OpRecord r;
    r.op = op;
    r.backend = backend;
    r.no_compute = no_compute;
    return r;
}

TEST(Coverage, CountsSupportPlacementAndWhy) {
    // Devices: BLAS (bit 0), CPU (bit 1).
    const std::vector<std::string> devices{"BLAS", "CPU"};
    const std::vector<OpRecord> recs{
        node("MUL_MAT", "BLAS"),    // BLAS and CPU support it, ran on BLAS
        node("MUL_MAT", "CPU"),     // only the CPU supports it (one token)
        node("MUL_MAT", "CPU"),     // BLAS supports it, weights repacked
        node("MUL_MAT", "CPU"),     // BLAS supports it and can read it: placement
        node("RMS_NORM", "CPU"),    // BLAS does not support it
        node("VIEW", "CPU", true),  // views are left out
        node("RMS_NORM", "CPU"),
    };
    const std::vector<uint32_t> sup{0b11, 0b10, 0b11, 0b11, 0b10, 0b11, 0b10};
    const std::vector<uint32_t> use{0b11, 0b11, 0b10, 0b11, 0b11, 0b11, 0b11};
    const auto rows = coverage_rows(recs, devices, sup, use);
    ASSERT_EQ(rows.size(), 2u);
    const CoverageRow& mm = rows[0];
    EXPECT_EQ(mm.op, "MUL_MAT");
    EXPECT_EQ(mm.count, 4);
    EXPECT_EQ(mm.supported, (std::map<std::string, int>{{"BLAS", 3}, {"CPU", 4}}));
    EXPECT_EQ(mm.ran, (std::map<std::string, int>{{"BLAS", 1}, {"CPU", 3}}));
    EXPECT_EQ(mm.note,
              "BLAS: 1 not supported; 1 supported, weights in buffers it cannot use; 1 supported, "
              "placed on CPU by the scheduler");
    const CoverageRow& rms = rows[1];
    EXPECT_EQ(rms.count, 2);
    EXPECT_EQ(rms.supported, (std::map<std::string, int>{{"BLAS", 0}, {"CPU", 2}}));
    EXPECT_EQ(rms.ran, (std::map<std::string, int>{{"CPU", 2}}));
    EXPECT_EQ(rms.note, "BLAS: 2 not supported");

    nlohmann::json j = to_json(mm);
    CoverageRow back;
    read(JsonIn(j, "row"), back);
    EXPECT_EQ(back.supported, mm.supported);
    EXPECT_EQ(back.note, mm.note);
}

TEST(Coverage, MasksMustMatchTheRecords) {
    EXPECT_THROW(coverage_rows({node("ADD", "CPU")}, {"CPU"}, {}, {}), Error);
}

}  // namespace
}  // namespace sb
