# cvattn_flags: a private INTERFACE target carrying warnings, CPU tuning and sanitizers for our
# own targets only (linked as $<BUILD_INTERFACE:...>, so consumers never inherit it).
add_library(cvattn_flags INTERFACE)
target_compile_options(cvattn_flags INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow>)
if(CVATTN_NATIVE)
  target_compile_options(cvattn_flags INTERFACE
    $<$<AND:$<CONFIG:Release,RelWithDebInfo>,$<CXX_COMPILER_ID:GNU,Clang>>:-march=native>)
endif()
if(CVATTN_SANITIZERS)
  string(REPLACE ";" "," _cvattn_san "${CVATTN_SANITIZERS}")
  target_compile_options(cvattn_flags INTERFACE -fsanitize=${_cvattn_san} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(cvattn_flags INTERFACE -fsanitize=${_cvattn_san})
endif()
