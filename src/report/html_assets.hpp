#pragma once
// Files embedded into the binary at build time (cmake/embed.cmake, wired in
// src/report/CMakeLists.txt): the HTML report's page (src/report/html/) and the chart
// libraries from the npm registry (scripts/report-assets.sh). Contents live for the whole
// program.
#include <string_view>
#include <vector>

namespace sb {

struct EmbeddedFile {
    std::string_view name;     // file name, e.g. "report.js", "chart.umd.js"
    std::string_view library;  // npm package it comes from; empty for stagebench's own files
    std::string_view version;  // that package's version; empty for stagebench's own files
    std::string_view content;
};

// Every embedded file: the libraries first (in the order they must load), then the page.
const std::vector<EmbeddedFile>& embedded_files();

// The embedded file called name. Throws sb::Error(runtime) when there is none (a build
// without the assets).
const EmbeddedFile& embedded_file(std::string_view name);

}  // namespace sb
