#pragma once
// The memory of a document's tests, per buffer type, by llama.cpp's own accounting
// (TestResult::memory): the Markdown table after `run`'s, `hybrid`'s and `sustained`'s tables,
// and the groups the HTML report's table (html_data.cpp memory_view) is made of. Formats only.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace sb {

// Tests of one configuration (model, test, devices, -ngl) whose memory is the same, buffer by
// buffer (sustained's rounds, a test run twice), are one group: llama.cpp's accounting of one
// configuration does not change. In the order of their first test; tests without memory are in
// none.
struct MemoryGroup {
    const TestResult* test = nullptr;  // the first of the group
    int tests = 1;
};
std::vector<MemoryGroup> memory_groups(const ResultDocument& doc);

// "| test | devices | buffer | weights MiB | context MiB | compute MiB | total MiB |" (with a
// model column first where the document's tests differ in model), a row per
// group and buffer type ("pp512+tg128 (20 tests alike)" for a group of more than one), then
// what the columns are. `devices` gives a test's devices cell (default: its devices, with
// " (ngl N)" where the document's tests differ in -ngl). Nothing when no test has memory;
// whether it wrote the table.
bool write_memory_markdown(const ResultDocument& doc, std::ostream& out,
                           const std::function<std::string(const TestResult&)>& devices = {});

}  // namespace sb
