#!/usr/bin/env bash
# Builds the `fuzz` preset (clang-14, libFuzzer + ASan + UBSan) and runs every harness for a
# bounded time, starting from its committed seeds (tests/fuzz/corpus/<target>/) and former crash
# inputs (tests/fuzz/regressions/<target>/); new inputs go to a scratch folder.
# Fails if any harness crashes (sanitizer report, escaped non-cvattn exception, leak, timeout,
# out-of-memory); prints the executions of each target. The preset compiles Highway's EMU128 target
# only and at -O0: what is fuzzed is parsing and validation, and the SIMD kernels' memory safety is
# the ASan stage's (every target's parity tests). clang-14 at -O1 with the sanitizers spent 167 s
# on the activation kernels alone (3.5 s at -O0); the fuzzers run fewer executions for it. Crash inputs are kept in
# build/fuzz/artifacts/.
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   space-separated subset of the targets (default: all)
#   FUZZ_WORK      folder that keeps the grown corpora between runs (default: a temporary one)
#   FUZZ_INSTALL_ONLY  1: install clang-14 and its runtimes if missing, then stop (.ci/run does it
#                  while its first stage compiles)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
read -r -a targets <<< "${FUZZ_TARGETS:-fuzz_npy fuzz_safetensors fuzz_state_dict fuzz_cli_args fuzz_dnn_layers}"

# Debian's clang-14 with its compiler-rt (libFuzzer and the sanitizer runtimes).
missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "${FUZZ_INSTALL_ONLY:-0}" = 1 ]; then exit 0; fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

declare -A max_len=([fuzz_npy]=4096 [fuzz_safetensors]=8192 [fuzz_state_dict]=8192
                    [fuzz_cli_args]=1024)
bin=build/fuzz/tests/fuzz
artifacts=build/fuzz/artifacts
mkdir -p "$artifacts"
if [ -n "${FUZZ_WORK:-}" ]; then
  scratch=$FUZZ_WORK
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
fi
# Two targets at a time (CI has two cores; each harness is one process), then the reports in order.
run_target() {
  local t=$1
  mkdir -p "$scratch/$t"
  set +e
  "$bin/$t" "$scratch/$t" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" \
    -dict="tests/fuzz/dict/$t.dict" \
    -max_total_time="$seconds" -max_len="${max_len[$t]:-4096}" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$scratch/$t.log" 2>&1
  echo $? >"$scratch/$t.rc"
}
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
failed=0
for t in "${targets[@]}"; do
  log="$scratch/$t.log"
  rc=$(cat "$scratch/$t.rc" 2>/dev/null || echo missing)
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -1)
  if [ "$rc" != 0 ]; then
    failed=1
    echo "fuzz: $t: FAILED (exit $rc) after ${execs:-?} executions; log tail:"
    tail -n 40 "$log"
  else
    echo "fuzz: $t: ${execs:-?} executions in ${seconds} s, no crash"
  fi
done
exit "$failed"
