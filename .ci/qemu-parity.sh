# Sourced by check-aarch64.sh and check-x86-cpus.sh: test programs under user-mode qemu, two at a
# time (CI has two cores; each program is one emulated process). The caller defines
# run CPU PROGRAM [ARGS...], which starts the program under qemu ($qemu) as that CPU with stderr
# joined to stdout, and the variable failed. parity_tests lists the SIMD parity programs of
# tests/CMakeLists.txt (every dispatched kernel against its reference twin, on every target the
# CPU offers).
mapfile -t parity_tests < <(sed -n 's#^cvattn_add_test(\(test_simd_parity[a-z0-9_]*\) .*#\1#p' \
  tests/CMakeLists.txt)

# run_programs CPU DIR RESULTS PROGRAM...: RESULTS/<program> holds the program's exit status on
# its first line and its output (--gtest_brief=1) after it.
run_programs() {
  local cpu=$1 dir=$2 results=$3
  shift 3
  export -f run
  export qemu
  printf '%s\n' "$@" | QP_CPU=$cpu QP_DIR=$dir QP_RESULTS=$results xargs -P 2 -I{} bash -c '
    out=$(run "$QP_CPU" "$QP_DIR/{}" --gtest_brief=1) && rc=0 || rc=$?
    printf "%s\n%s\n" "$rc" "$out" > "$QP_RESULTS/{}"'
}

# simd_targets COMMAND...: the targets a CPU offers, as the parity program COMMAND (run directly
# or through run) lists them when asked for an unknown CVATTN_SIMD value ("avx2, sse4, scalar").
simd_targets() {
  (CVATTN_SIMD=? "$@" --gtest_filter='SimdTargets.*' || true) |
    sed -n 's/.*(choices: best, \([^)]*\)).*/\1/p' | head -1
}

# parity_on_cpu TAG CPU DIR: the parity programs, one line each; failed=1 and the output's tail
# on failure.
parity_on_cpu() {
  local tag=$1 cpu=$2 dir=$3 targets_here t rc summary results
  # The targets this CPU offers: the list an unknown CVATTN_SIMD value is answered with.
  targets_here=$(simd_targets run "$cpu" "$dir/test_simd_parity")
  results=$(mktemp -d)
  run_programs "$cpu" "$dir" "$results" "${parity_tests[@]}"
  for t in "${parity_tests[@]}"; do
    rc=$(head -1 "$results/$t" 2>/dev/null || echo missing)
    # A program killed by a signal prints neither line: then the summary is its exit status.
    summary=$( (tail -n +2 "$results/$t" 2>/dev/null |
      grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' || true) | tr -s ' ' | tr '\n' ' ')
    echo "$tag: $cpu [${CVATTN_PARITY_TARGETS:+best of }${targets_here:-?}] $t: ${summary:-exit $rc}"
    if [ "$rc" != 0 ]; then
      failed=1
      tail -n +2 "$results/$t" 2>/dev/null | tail -40
    fi
  done
  rm -rf "$results"
}

# suite_on_cpu TAG CPU DIR WHAT PROGRAM...: the programs; failed=1 and the output's tail of each
# that fails, then one line with the count of tests passed ("TAG: CPU: N WHAT, M tests passed").
suite_on_cpu() {
  local tag=$1 cpu=$2 dir=$3 what=$4 t rc results passed=0
  shift 4
  results=$(mktemp -d)
  run_programs "$cpu" "$dir" "$results" "$@"
  for t in "$@"; do
    rc=$(head -1 "$results/$t" 2>/dev/null || echo missing)
    if [ "$rc" != 0 ]; then
      failed=1
      echo "$tag: $cpu $t failed (exit $rc):"
      tail -n +2 "$results/$t" 2>/dev/null | tail -40
    else
      passed=$((passed + $(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$results/$t")))
    fi
  done
  rm -rf "$results"
  echo "$tag: $cpu: $# $what, $passed tests passed"
}
