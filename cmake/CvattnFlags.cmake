# cvattn_flags: a private INTERFACE target carrying warnings, CPU tuning and sanitizers for our
# own targets only (linked as $<BUILD_INTERFACE:...>, so consumers never inherit it).
# cvattn_test_flags: the same for test programs, except that under ASan/UBSan their own sources
# are not instrumented: the runtimes are linked and the library, the tool and the samples they
# exercise are instrumented, but GoogleTest-heavy test code is not (it tripled the sanitizer
# build's compile time and is not what the sanitizers are there to check). ThreadSanitizer
# instruments the tests too: it must see their synchronisation to judge the library's.
set(_cvattn_common_options $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow>)
# GCC 12's own AVX-512 intrinsics (avx512fintrin.h: the _mm512_undefined_* helpers initialise a
# variable from itself) raise -Wmaybe-uninitialized wherever Eigen's or Highway's AVX-512 code
# inlines them (GCC bug 105593, fixed in GCC 13). That one diagnostic stays a warning there;
# -Wuninitialized (a definite read) stays an error, and .ci/check-flags.sh fails the build when a
# maybe-uninitialized warning points into our own sources (docs/performance.md#build-flags).
list(APPEND _cvattn_common_options
     $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-error=maybe-uninitialized>)
if(CVATTN_NATIVE)
  list(APPEND _cvattn_common_options
       $<$<AND:$<CONFIG:Release,RelWithDebInfo>,$<CXX_COMPILER_ID:GNU,Clang>>:-march=native>)
elseif(CVATTN_ARCH)
  # A fixed target instead of this CPU, e.g. x86-64-v2 or x86-64-v4 (the CI flag checks).
  list(APPEND _cvattn_common_options $<$<CXX_COMPILER_ID:GNU,Clang>:-march=${CVATTN_ARCH}>)
endif()
# Highway 1.0.3 (Debian 12) compiles its AVX3_DL target (AVX-512 with VNNI, VBMI2, VPOPCNTDQ,
# BITALG, GFNI, VAES: Ice Lake and later Xeons, Zen 4 and 5) only when HWY_WANT_AVX3_DL is
# defined. Every build defines it: the portable build then dispatches to the same target as a
# native build on those CPUs (without it, up to 9 % slower on some rows on Emerald Rapids), and a
# -march with AVX-VNNI, which makes AVX3_DL the baseline, compiles at all (docs/performance.md#build-flags).
list(APPEND _cvattn_common_options -DHWY_WANT_AVX3_DL)
add_library(cvattn_flags INTERFACE)
add_library(cvattn_test_flags INTERFACE)
target_compile_options(cvattn_flags INTERFACE ${_cvattn_common_options})
target_compile_options(cvattn_test_flags INTERFACE ${_cvattn_common_options})
if(CVATTN_SANITIZERS)
  string(REPLACE ";" "," _cvattn_san "${CVATTN_SANITIZERS}")
  target_compile_options(cvattn_flags INTERFACE -fsanitize=${_cvattn_san} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(cvattn_flags INTERFACE -fsanitize=${_cvattn_san})
  if("thread" IN_LIST CVATTN_SANITIZERS)
    target_link_libraries(cvattn_test_flags INTERFACE cvattn_flags)
  else()
    target_link_options(cvattn_test_flags INTERFACE -fsanitize=${_cvattn_san})
  endif()
  # AddressSanitizer + UBSan programs are linked position-dependent: as PIEs their check metadata
  # (pointers to globals, source locations, type descriptors) took 1.5 million run-time
  # relocations, and starting the tool took 370 ms instead of 200 ms, which the CLI tests pay on
  # every run of it (docs/reliability.md). TSan needs PIE; the fuzzers start once.
  if("address" IN_LIST CVATTN_SANITIZERS AND NOT "fuzzer-no-link" IN_LIST CVATTN_SANITIZERS)
    set(_cvattn_no_pie $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
    target_link_options(cvattn_flags INTERFACE ${_cvattn_no_pie})
    target_link_options(cvattn_test_flags INTERFACE ${_cvattn_no_pie})
  endif()
endif()
# GNU gold links our ~100 test programs about twice as fast as ld.bfd (measured on a sanitizer
# test program: 3.5 s vs 1.8 s); used for our own programs where GCC's toolchain has it (clang's
# sanitizer runtimes make gold warn, and the clang build is the fuzzers' only).
include(CheckLinkerFlag)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  check_linker_flag(CXX "-fuse-ld=gold" CVATTN_HAS_GOLD)
endif()
if(CVATTN_HAS_GOLD)
  target_link_options(cvattn_flags INTERFACE -fuse-ld=gold)
  target_link_options(cvattn_test_flags INTERFACE -fuse-ld=gold)
endif()

# cvattn_precompile_headers(<target> <header>): the header, precompiled once, is included first in
# every source of the target. The standard headers and cvattn's core ones (which bring OpenCV's
# cv::Mat) were 70-80 % of the compile time of a typical library or tool source; precompiled, the
# library took 305 instead of 383 CPU seconds to build (docs/reliability.md#ci-time). A source
# with compile options of its own (-ffp-contract=off, ...) parses the header instead: GCC takes
# the optimisation options saved in a precompiled header over the source's (with it, FMA came back
# into the bit-exact kernels), and so does a source that includes Highway (itself, through
# core/dispatch.hpp or a -inl.h body): the aarch64 GCC 12 crashes in
# arm_sve.h under a precompiled header, and those sources' time is code generation, not parsing.
# Call it after the target's last per-source option.
function(cvattn_precompile_headers target header)
  if(NOT CVATTN_PRECOMPILE_HEADERS)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${header})
  get_target_property(_sources ${target} SOURCES)
  foreach(_src IN LISTS _sources)
    get_source_file_property(_options ${_src} COMPILE_OPTIONS)
    get_source_file_property(_flags ${_src} COMPILE_FLAGS)
    get_filename_component(_path ${_src} ABSOLUTE)
    file(STRINGS ${_path} _highway REGEX "#include (<hwy/|\"core/dispatch\\.hpp\"|\"[^\"]*-inl\\.h\")")
    if(_options OR _flags OR _highway)
      set_source_files_properties(${_src} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
