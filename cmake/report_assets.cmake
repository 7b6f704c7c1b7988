# Locates the JavaScript libraries the HTML report embeds (and the browser driver its test
# uses), provisioned by scripts/report-assets.sh from the npm registry, pinned and checked.
#
#   STAGEBENCH_REPORT_ASSETS_DIR   the directory scripts/report-assets.sh printed (`make`
#                                  passes it); when empty, configure runs the script itself.
#
# Sets SB_REPORT_ASSETS_DIR and SB_REPORT_LIBRARIES (a list of "name|version|file").
set(STAGEBENCH_REPORT_ASSETS_DIR "" CACHE PATH
    "HTML report assets (Chart.js...), see scripts/report-assets.sh")

if(NOT STAGEBENCH_REPORT_ASSETS_DIR)
  message(STATUS "stagebench: fetching the HTML report assets (scripts/report-assets.sh)")
  execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/report-assets.sh"
                  OUTPUT_VARIABLE _dir ERROR_VARIABLE _err RESULT_VARIABLE _rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "scripts/report-assets.sh failed:\n${_err}\n"
                        "Run it by hand, or pass -DSTAGEBENCH_REPORT_ASSETS_DIR=<its output>.")
  endif()
  set(STAGEBENCH_REPORT_ASSETS_DIR "${_dir}" CACHE PATH
      "HTML report assets (Chart.js...), see scripts/report-assets.sh" FORCE)
endif()
set(SB_REPORT_ASSETS_DIR "${STAGEBENCH_REPORT_ASSETS_DIR}")
if(NOT EXISTS "${SB_REPORT_ASSETS_DIR}/manifest.txt")
  message(FATAL_ERROR "STAGEBENCH_REPORT_ASSETS_DIR=${SB_REPORT_ASSETS_DIR} holds no manifest.txt; "
                      "pass the directory scripts/report-assets.sh prints, or leave it empty")
endif()

set(SB_REPORT_LIBRARIES "")
file(STRINGS "${SB_REPORT_ASSETS_DIR}/manifest.txt" _lines)
foreach(_line IN LISTS _lines)
  string(REPLACE " " ";" _f "${_line}")
  list(GET _f 0 _name)
  list(GET _f 1 _version)
  list(GET _f 2 _file)
  if(NOT EXISTS "${SB_REPORT_ASSETS_DIR}/${_file}")
    message(FATAL_ERROR "${SB_REPORT_ASSETS_DIR}/${_file} is missing; rerun scripts/report-assets.sh")
  endif()
  list(APPEND SB_REPORT_LIBRARIES "${_name}|${_version}|${_file}")
endforeach()
message(STATUS "stagebench: HTML report assets from ${SB_REPORT_ASSETS_DIR}")
