#include "core/backend_env.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(BackendEnv, KeepsTheBackendKnobsAndTheNamedOnesOnly) {
    const nlohmann::json j =
        backend_env_of({"HOME=/root", "GGML_HEXAGON_OPSTAGE=0x1", "LLAMA_GRAPH_REUSE_DISABLE=1",
                        "OMP_NUM_THREADS=2", "SECRET_TOKEN=x", "MY_KNOB=a=b",
                        "STAGEBENCH_RECORD_ENV=MY_KNOB,,ABSENT", "=odd", "NOEQUALS"});
    const nlohmann::json want = {{"GGML_HEXAGON_OPSTAGE", "0x1"},
                                 {"LLAMA_GRAPH_REUSE_DISABLE", "1"},
                                 {"MY_KNOB", "a=b"},
                                 {"OMP_NUM_THREADS", "2"}};
    EXPECT_EQ(j, want);
    EXPECT_EQ(backend_env_of({}), nlohmann::json::object());
}

}  // namespace
}  // namespace sb
