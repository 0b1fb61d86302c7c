#!/usr/bin/env bash
# Build-flag checks (issue 16): the library's kernel layer compiles warning-free with -Werror for
# x86-64-v4 (AVX-512: Eigen's and Highway's 512-bit code is instantiated) and for x86-64-v2,
# whatever CPU runs CI. Only the sources of src/functional/ and src/core/ that include Highway, Eigen
# or OpenCV's intrinsics are compiled: every SIMD path, GEMM and Eigen product lives there
# (modules, models, io, viz and dnn hold none, docs/performance.md#one-kernel-layer). GCC 12 keeps
# -Wmaybe-uninitialized a warning (its own AVX-512 headers trip it, cmake/CvattnFlags.cmake), so
# any such warning that points into our sources fails here; and a definite uninitialised read
# compiled with the library's exact flags must still be an error.
set -euo pipefail
cd "$(dirname "$0")/.."
# (x86-64-v1, the portable default, is the ci preset's own build; flags-v2 remains a preset for
# local checks.)
for preset in flags-v4; do
  log="build/$preset.log"
  cmake --preset "$preset" >/dev/null
  objects=$(ninja -C "build/$preset" -t targets all |
            sed -n 's#^\(src/CMakeFiles/cvattn\.dir/\(functional\|core\)/[^:]*\.o\):.*#\1#p')
  # Of those, the ones that include Highway, Eigen or OpenCV's universal intrinsics, as the
  # release build's dependency records tell (step 1 of .ci/run): only their code calls the AVX-512
  # intrinsics whose headers trip GCC 12; the others are plain C++ and already compiled
  # warning-free. Without that build, all of them.
  if [ -f build/ci/build.ninja ]; then
    simd=()
    for o in $objects; do
      if ninja -C build/ci -t deps "$o" 2>/dev/null |
         grep -qE '/hwy/|/eigen3/|opencv2/core/hal/intrin'; then simd+=("$o"); fi
    done
    if [ ${#simd[@]} -gt 0 ]; then objects="${simd[*]}"; fi
  fi
  echo "check-flags: $preset: compiling $(echo "$objects" | wc -w) sources of src/functional and src/core"
  # shellcheck disable=SC2086  # one word per object file
  if ! ninja -C "build/$preset" $objects > "$log" 2>&1; then
    grep -E 'error|FAILED' "$log" | head -20 >&2
    echo "check-flags: $preset: the library does not build (see $log)" >&2
    exit 1
  fi
  ours=$(grep -E '^[^ ]*:[0-9]+:[0-9]+: warning:' "$log" | grep -v '^/usr/' || true)
  if [ -n "$ours" ]; then
    echo "check-flags: $preset: warnings in our own sources:" >&2
    echo "$ours" >&2
    exit 1
  fi
  # The library's compile command for one source, applied to a file with a definite
  # uninitialised read: it must fail.
  cmd=$(ninja -C "build/$preset" -t commands cvattn | awk '!f && /functional\/activation\.cpp/ { print; f = 1 }')
  probe="build/$preset/uninit_probe.cpp"
  printf 'int probe(int c) { int v; return v + c; }\n' > "$probe"
  cmd=${cmd//-MD -MT */-o /dev/null -c $PWD/$probe}
  if (cd "build/$preset" && eval "$cmd") 2>/dev/null; then
    echo "check-flags: $preset: an uninitialised read compiled without error" >&2
    exit 1
  fi
  echo "check-flags: $preset: library warning-free, uninitialised reads still fatal"
done
