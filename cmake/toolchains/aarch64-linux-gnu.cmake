# Cross-compiles for 64-bit ARM Linux (Debian 12 / Raspberry Pi OS bookworm and compatible)
# with Debian's g++-aarch64-linux-gnu against an arm64 sysroot made by scripts/sysroot.sh.
#
#   STAGEBENCH_SYSROOT   the sysroot (CMake variable or environment variable; required). The
#                        environment variable reaches CMake's try_compile projects too.
#   STAGEBENCH_CROSS_PREFIX  compiler prefix (default aarch64-linux-gnu-)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT STAGEBENCH_SYSROOT AND DEFINED ENV{STAGEBENCH_SYSROOT})
  set(STAGEBENCH_SYSROOT "$ENV{STAGEBENCH_SYSROOT}")
endif()
if(NOT STAGEBENCH_SYSROOT OR NOT EXISTS "${STAGEBENCH_SYSROOT}/.stagebench-sysroot")
  message(FATAL_ERROR "aarch64-linux-gnu.cmake: set STAGEBENCH_SYSROOT to the directory "
                      "scripts/sysroot.sh prints (got '${STAGEBENCH_SYSROOT}')")
endif()
# try_compile projects re-read this file without the cache: hand them the sysroot.
set(ENV{STAGEBENCH_SYSROOT} "${STAGEBENCH_SYSROOT}")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES STAGEBENCH_SYSROOT STAGEBENCH_CROSS_PREFIX)

if(NOT STAGEBENCH_CROSS_PREFIX)
  set(STAGEBENCH_CROSS_PREFIX aarch64-linux-gnu-)
endif()
set(CMAKE_C_COMPILER ${STAGEBENCH_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${STAGEBENCH_CROSS_PREFIX}g++)
set(CMAKE_AR ${STAGEBENCH_CROSS_PREFIX}ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${STAGEBENCH_CROSS_PREFIX}ranlib CACHE FILEPATH "")
set(CMAKE_STRIP ${STAGEBENCH_CROSS_PREFIX}strip CACHE FILEPATH "")

set(CMAKE_SYSROOT "${STAGEBENCH_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${STAGEBENCH_SYSROOT}")
# Programs (git, the host's tools) from the host; libraries, headers and packages from the
# sysroot only, so nothing of the x86 host is linked by mistake.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${STAGEBENCH_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${STAGEBENCH_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${STAGEBENCH_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Programs built for the target run under qemu where a configure step wants to run one.
find_program(_sb_qemu qemu-aarch64)
if(_sb_qemu)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${_sb_qemu};-L;${STAGEBENCH_SYSROOT}")
endif()
