# Locates the llama.cpp build that scripts/llama.sh produced (or a user's own build) and
# exposes it as the imported target sb::llama. Only src/engine and src/profile link it.
#
#   STAGEBENCH_LLAMA_BUILD_DIR   a llama.cpp CMake build directory (required; `make` passes
#                                the one scripts/llama.sh built in the cache)
#   STAGEBENCH_LLAMA_SOURCE_DIR  its source tree (default: read from the build's CMakeCache)
set(STAGEBENCH_LLAMA_BUILD_DIR "" CACHE PATH "llama.cpp build directory (see scripts/llama.sh)")
set(STAGEBENCH_LLAMA_SOURCE_DIR "" CACHE PATH "llama.cpp source directory")

if(NOT STAGEBENCH_LLAMA_BUILD_DIR OR NOT EXISTS "${STAGEBENCH_LLAMA_BUILD_DIR}/CMakeCache.txt")
  message(FATAL_ERROR "STAGEBENCH_LLAMA_BUILD_DIR must name a llama.cpp build directory; "
                      "run `make` (which calls scripts/llama.sh) or pass -DSTAGEBENCH_LLAMA_BUILD_DIR=...")
endif()
set(_lb "${STAGEBENCH_LLAMA_BUILD_DIR}")
if(NOT STAGEBENCH_LLAMA_SOURCE_DIR)
  file(STRINGS "${_lb}/CMakeCache.txt" _src REGEX "^llama(\\.cpp)?_SOURCE_DIR:STATIC=")
  string(REGEX REPLACE "^llama(\\.cpp)?_SOURCE_DIR:STATIC=" "" _src "${_src}")
  set(STAGEBENCH_LLAMA_SOURCE_DIR "${_src}" CACHE PATH "" FORCE)
endif()
set(_ls "${STAGEBENCH_LLAMA_SOURCE_DIR}")
if(NOT EXISTS "${_ls}/include/llama.h")
  message(FATAL_ERROR "no include/llama.h under STAGEBENCH_LLAMA_SOURCE_DIR=${_ls}")
endif()

# Version: the pin file written by scripts/llama.sh, else git, else unknown.
set(SB_LLAMA_TAG "unknown")
set(SB_LLAMA_COMMIT "unknown")
if(EXISTS "${_ls}/.stagebench-pin")
  file(STRINGS "${_ls}/.stagebench-pin" _tag REGEX "^tag=")
  string(REPLACE "tag=" "" SB_LLAMA_TAG "${_tag}")
endif()
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_ls}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_commit)
    set(SB_LLAMA_COMMIT "${_commit}")
  endif()
  if(SB_LLAMA_TAG STREQUAL "unknown")
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_ls}" describe --tags --always --dirty
                    OUTPUT_VARIABLE _tag OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_tag)
      set(SB_LLAMA_TAG "${_tag}")
    endif()
  endif()
endif()

# Shared libraries land in bin/ (llama.cpp's default) or lib/ (some configurations).
set(_libs "")
foreach(_name llama ggml ggml-base)
  # Searched anew at every configure: a cached path would keep linking the previous llama.cpp
  # build after STAGEBENCH_LLAMA_BUILD_DIR moved (new build options, LLAMA_CPP_DIR).
  # The build directory is searched as it is, not under a cross build's sysroot.
  unset(_lib_${_name} CACHE)
  find_library(_lib_${_name} NAMES ${_name} PATHS "${_lb}/bin" "${_lb}/lib" "${_lb}/src"
               "${_lb}/ggml/src" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH REQUIRED)
  list(APPEND _libs "${_lib_${_name}}")
endforeach()
get_filename_component(SB_LLAMA_LIB_DIR "${_lib_llama}" DIRECTORY)

add_library(sb_llama INTERFACE)
target_include_directories(sb_llama SYSTEM INTERFACE "${_ls}/include" "${_ls}/ggml/include")
if(_lib_llama MATCHES "\\.a$")
  # A static llama.cpp (the agent's, scripts/llama.sh with STAGEBENCH_AGENT_ISA): each backend
  # (CPU, RPC) is a library of its own that libggml.a registers and that calls back into
  # ggml-base, so they are linked as one group.
  file(GLOB_RECURSE _backend_libs "${_lb}/ggml/src/libggml-*.a")
  list(FILTER _backend_libs EXCLUDE REGEX "/libggml-base\\.a$")
  set(_libs "${_lib_llama}" "${_lib_ggml}" ${_backend_libs} "${_lib_ggml-base}")
  target_link_libraries(sb_llama INTERFACE -Wl,--start-group ${_libs} -Wl,--end-group
                        Threads::Threads)
else()
  target_link_libraries(sb_llama INTERFACE ${_libs})
endif()
add_library(sb::llama ALIAS sb_llama)

# llama.cpp's own accounting of what it allocated per buffer type (weights, context, compute):
# llama_get_memory_breakdown, exported by libllama but declared in a staging header of its
# src/ (llama-ext.h). Where the tree has it, one generated header includes that file alone (the
# rest of src/ stays off the include path) and SB_HAVE_LLAMA_MEMORY_BREAKDOWN is set; a
# llama.cpp without it builds too, and its tests record no memory.
set(SB_HAVE_LLAMA_MEMORY_BREAKDOWN OFF)
if(EXISTS "${_ls}/src/llama-ext.h")
  file(STRINGS "${_ls}/src/llama-ext.h" _mb REGEX "llama_get_memory_breakdown")
  if(_mb)
    set(SB_HAVE_LLAMA_MEMORY_BREAKDOWN ON)
    file(WRITE "${CMAKE_BINARY_DIR}/generated/sb_llama_ext/sb_llama_ext.h.in"
         "#pragma once\n#include \"${_ls}/src/llama-ext.h\"\n")
    configure_file("${CMAKE_BINARY_DIR}/generated/sb_llama_ext/sb_llama_ext.h.in"
                   "${CMAKE_BINARY_DIR}/generated/sb_llama_ext/sb_llama_ext.h" COPYONLY)
  endif()
endif()
message(STATUS "llama.cpp memory breakdown per buffer type: ${SB_HAVE_LLAMA_MEMORY_BREAKDOWN}")
set(CMAKE_BUILD_RPATH "${SB_LLAMA_LIB_DIR}")
set(CMAKE_INSTALL_RPATH "${SB_LLAMA_LIB_DIR}")

# The peers built from the same tree: tests and benchmarks use them as real programs.
file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/peers")
foreach(_peer llama-bench llama-server ggml-rpc-server llama-perplexity)
  if(EXISTS "${_lb}/bin/${_peer}")
    file(CREATE_LINK "${_lb}/bin/${_peer}" "${CMAKE_BINARY_DIR}/peers/${_peer}" SYMBOLIC)
  endif()
endforeach()
message(STATUS "stagebench: llama.cpp ${SB_LLAMA_TAG} (${SB_LLAMA_COMMIT}) from ${_lb}")
