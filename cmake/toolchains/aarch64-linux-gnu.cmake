# Cross-compiling cvattn for 64-bit Arm Linux with Debian's GCC cross compiler
# (g++-aarch64-linux-gnu) against arm64 Debian packages unpacked into a folder of their own
# (.ci/check-aarch64.sh makes it; docs/performance.md#aarch64). The host's own packages are
# never touched. Programs run under qemu-aarch64, which CMake and CTest use as the emulator.
#   cmake -S . -B build/aarch64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#     -DCVATTN_AARCH64_ROOT=$PWD/build/aarch64-sysroot
# CVATTN_AARCH64_ROOT (cache variable or environment variable): the unpacked arm64 packages
# (OpenCV, Highway, OpenBLAS, GoogleTest, Eigen, nlohmann-json and their dependencies).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT CVATTN_AARCH64_ROOT AND DEFINED ENV{CVATTN_AARCH64_ROOT})
  set(CVATTN_AARCH64_ROOT "$ENV{CVATTN_AARCH64_ROOT}")
endif()
if(NOT CVATTN_AARCH64_ROOT)
  message(FATAL_ERROR "aarch64 toolchain: set CVATTN_AARCH64_ROOT to the unpacked arm64 packages "
                      "(bash .ci/check-aarch64.sh makes build/aarch64-sysroot)")
endif()
set(CVATTN_AARCH64_ROOT "${CVATTN_AARCH64_ROOT}" CACHE PATH "Unpacked arm64 Debian packages")
# try_compile projects (the OpenMP and compiler checks) read this file again.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CVATTN_AARCH64_ROOT)

# Libraries, headers and package configs only from the arm64 packages (and the cross compiler's
# own /usr/aarch64-linux-gnu); programs (ninja, python, ...) from the host.
set(CMAKE_FIND_ROOT_PATH "${CVATTN_AARCH64_ROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The linker resolves the dependencies of OpenCV's and OpenBLAS's shared libraries there too.
set(_cvattn_arm_libs "${CVATTN_AARCH64_ROOT}/usr/lib/aarch64-linux-gnu")
string(APPEND _cvattn_arm_libs ":${CVATTN_AARCH64_ROOT}/lib/aarch64-linux-gnu")
string(APPEND _cvattn_arm_libs ":${CVATTN_AARCH64_ROOT}/usr/lib/aarch64-linux-gnu/blas")
string(APPEND _cvattn_arm_libs ":${CVATTN_AARCH64_ROOT}/usr/lib/aarch64-linux-gnu/lapack")
foreach(_kind EXE SHARED MODULE)
  set(CMAKE_${_kind}_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cvattn_arm_libs}")
endforeach()

# Tests (gtest_discover_tests, ctest) run under user-mode qemu with the arm64 packages as the
# loader's root. QEMU_CPU picks the emulated CPU (e.g. max,sve-default-vector-length=32).
find_program(CVATTN_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(CVATTN_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${CVATTN_QEMU_AARCH64};-L;${CVATTN_AARCH64_ROOT}")
endif()
