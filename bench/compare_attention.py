"""Interleaved one-thread comparison of cvattn's bench_attention with the PyTorch baseline.

The machine is shared, so the two are measured alternately, REPS times, and the medians of the
per-run medians are compared (CPU time on both sides: Google Benchmark's CPU column and
time.process_time in torch_attention_baseline.py). cvattn runs twice per repetition: with
OMP_NUM_THREADS=1 and with the bench's own cvattn::set_num_threads(1) alone.

Run: /usr/bin/python3 bench/compare_attention.py BUILD/bench/bench_attention [REPS]
"""
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# torch case name -> Google Benchmark name (threads:1 entries)
PAIRS = [
    ("sdpa [8,8,196,32]", "BM_Sdpa/threads:1/weights:0"),
    ("sdpa [8,8,196,32]", "BM_Sdpa/threads:1/weights:1"),
    ("mha [8,196,256] h8 weights", "BM_Mha/threads:1/weights:1"),
    ("mha [8,196,256] h8 no weights", "BM_Mha/threads:1/weights:0"),
    ("nonlocal [2,64,28,28]", "BM_NonLocal/threads:1/maps:0"),
    ("nonlocal [2,64,28,28]", "BM_NonLocal/threads:1/maps:1"),
]


def run_torch():
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_attention_baseline.py"),
                          "sdpa [8", "mha", "nonlocal"], env=env, check=True,
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"(.*?)\s+median\s+([0-9.]+) ms", line)
        if m:
            res[m.group(1).strip()] = float(m.group(2))
    return res


def run_cvattn(binary, omp_env):
    env = dict(os.environ)
    if omp_env:
        env["OMP_NUM_THREADS"] = "1"
    else:
        env.pop("OMP_NUM_THREADS", None)
    filt = "BM_(Sdpa|Mha|NonLocal)/threads:1/"
    out = subprocess.run([binary, "--benchmark_filter=" + filt, "--benchmark_repetitions=5",
                          "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            res[b["run_name"]] = b["cpu_time"]  # ms (the benchmarks' unit)
    return res


def main():
    binary = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch_runs, omp_runs, own_runs = [], [], []
    for r in range(reps):
        torch_runs.append(run_torch())
        omp_runs.append(run_cvattn(binary, True))
        own_runs.append(run_cvattn(binary, False))
        print("repetition %d/%d done" % (r + 1, reps), file=sys.stderr)

    def med(runs, key):
        return statistics.median(run[key] for run in runs)

    print("%-34s %-30s %9s %9s %9s %7s %7s" % ("pytorch case", "cvattn case", "torch ms",
                                                "omp1 ms", "own1 ms", "ratio", "ratio"))
    for t, c in PAIRS:
        tm, om, wm = med(torch_runs, t), med(omp_runs, c), med(own_runs, c)
        print("%-34s %-30s %9.2f %9.2f %9.2f %7.2f %7.2f" % (t, c, tm, om, wm, tm / om, tm / wm))


if __name__ == "__main__":
    main()
