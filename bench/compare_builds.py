#!/usr/bin/env python3
"""Every Google Benchmark row of two build trees, interleaved: is build B within a bound of A?

Issue 17 asks that a portable build (Highway choosing the SIMD target at run time) be within 5 %
of a native one (-march=native) on every benchmark row. This runs each bench_* program that both
trees have, in rounds that alternate which tree goes first, and compares the mean CPU time per
row over all repetitions of all rounds (the statistic Google Benchmark's own mean reports; --stat
median where a shared host's bursts land in a few samples; --stat min, each build's least
disturbed sample, where the host's speed drifts for whole runs).
Rows outside the bound are run again for --recheck more rounds, so that one noisy pass on a
shared machine does not decide them; the table reports every sample taken.

  cmake --preset ci && cmake --build --preset ci
  cmake -S . -B build/native --preset ci -DCVATTN_NATIVE=ON && cmake --build build/native
  python3 bench/compare_builds.py --a build/native --b build/ci   # A = native, B = portable
  python3 bench/compare_builds.py --a build/ci --a-env CVATTN_SIMD=avx2 --a-name avx2 \
      --b build/ci --b-name avx3                                 # two targets of one tree

On a VM whose speed moves by 10-40 % from one process to the next (docs/performance.md), a
row's mean over a few processes cannot resolve 5 %. --together runs A and B at the same moment,
one per core, swapping the cores every round, so that the machine's state at that moment weighs
on both; use it for one-thread rows (--filter), since a two-thread row would then share its cores
with the other build:

  python3 bench/compare_builds.py --a build/native --b build/ci --together --rounds 6 \
      --programs bench_conv --filter '/1/'

Needs only the Python standard library (no torch). One thread per row unless the row's name
says otherwise (the bench programs pin their own thread counts).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def bench_programs(tree):
    d = os.path.join(tree, "bench")
    if not os.path.isdir(d):
        return set()
    return {n for n in os.listdir(d)
            if n.startswith("bench_") and os.access(os.path.join(d, n), os.X_OK)
            and os.path.isfile(os.path.join(d, n))}


def launch(tree, env, program, args, row_filter, core=None):
    """One run of one program, with env added, started (pinned to `core` when given)."""
    cmd = [os.path.join(tree, "bench", program), "--benchmark_format=json",
           f"--benchmark_repetitions={args.reps}", f"--benchmark_min_time={args.min_time}",
           f"--benchmark_filter={row_filter}"]
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env}, preexec_fn=pin)
    return cmd, proc


def finish(started):
    """{row name: [cpu ms of each repetition]} of a run begun by launch()."""
    cmd, proc = started
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"compare_builds: error: {' '.join(cmd)} exited with {proc.returncode}:\n"
                         f"{err[-2000:]}")
    rows = {}
    if not out.strip():  # the filter matched no row of this program
        return rows
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        rows.setdefault(b["run_name"], []).append(b["cpu_time"] * UNIT_MS[b["time_unit"]])
    return rows


def rounds(program, row_filter, n, start, args, samples):
    for r in range(start, start + n):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        if args.together:
            # Both trees at once, one per core, the cores swapped every round: whatever else
            # loads the machine at that moment loads both alike.
            cores = dict(zip(order, args.cores))
            runs = {side: launch(*tree_env(side, args), program, args, row_filter, cores[side])
                    for side in order}
            results = {side: finish(runs[side]) for side in order}
        else:
            results = {side: finish(launch(*tree_env(side, args), program, args, row_filter))
                       for side in order}
        for side in order:
            for name, times in results[side].items():
                samples.setdefault(name, {"a": [], "b": []})[side].extend(times)


def tree_env(side, args):
    return (args.a, args.a_env) if side == "a" else (args.b, args.b_env)


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    ys = sorted(xs)
    mid = len(ys) // 2
    return ys[mid] if len(ys) % 2 else (ys[mid - 1] + ys[mid]) / 2


def table_rows(program, samples, args):
    """(row name, markdown row, B/A ratio, over the bound?) for each row both trees measured."""
    for name, s in samples.items():
        if not s["a"] or not s["b"]:
            continue
        ma, mb = args.statistic(s["a"]), args.statistic(s["b"])
        ratio = mb / ma
        is_over = ratio > 1 + args.bound
        flag = " **over**" if is_over else ""
        line = (f"| {program} | {name} | {ma:.4g} | {mb:.4g} | {ratio:.3f}{flag} | "
                f"{len(s['a'])}+{len(s['b'])} |")
        yield name, line, ratio, is_over


def write_json(path, results):
    # Written whole to a temporary name, then renamed: never a half-written file.
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--a", required=True, help="reference build tree (e.g. build/native)")
    p.add_argument("--b", required=True, help="build tree under test (e.g. build/ci)")
    p.add_argument("--a-name", default="native")
    p.add_argument("--b-name", default="portable")
    p.add_argument("--a-env", action="append", default=[], metavar="VAR=VALUE",
                   help="environment for A's runs (repeatable), e.g. CVATTN_SIMD=avx2 to compare "
                        "two SIMD targets of one tree")
    p.add_argument("--b-env", action="append", default=[], metavar="VAR=VALUE")
    p.add_argument("--programs", default="", help="comma-separated bench programs (default: all in both)")
    p.add_argument("--skip", default="bench_limits",
                   help="programs left out (default bench_limits: it measures the machine and Eigen's "
                        "compile-time ISA on purpose)")
    p.add_argument("--filter", default=".", help="Google Benchmark row filter (regex)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--recheck", type=int, default=4, help="extra rounds for rows outside the bound")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--min-time", type=float, default=0.1)
    p.add_argument("--bound", type=float, default=0.05, help="allowed slowdown of B (0.05 = 5 %%)")
    p.add_argument("--together", action="store_true",
                   help="run A and B at the same time, pinned to two cores swapped every round "
                        "(for one-thread rows on a machine whose speed moves between processes; "
                        "multi-thread rows then compete for the cores: use --filter)")
    p.add_argument("--cores", default="0,1", help="the two cores of --together (default 0,1)")
    p.add_argument("--stat", choices=["mean", "median", "min"], default="mean",
                   help="per row and build, over all samples (default mean, Google Benchmark's "
                        "own; median where a shared host's bursts, seen at 5-10x a row's time, "
                        "land in a few samples; min, the least disturbed sample, where the "
                        "host's speed drifts for whole runs)")
    p.add_argument("--json", help="write every sample here")
    args = p.parse_args()
    args.statistic = {"mean": mean, "median": median, "min": min}[args.stat]
    for side in ("a_env", "b_env"):
        pairs = getattr(args, side)
        if any("=" not in x for x in pairs):
            raise SystemExit(f"compare_builds: error: --{side.replace('_', '-')} takes VAR=VALUE")
        setattr(args, side, dict(x.split("=", 1) for x in pairs))

    try:
        args.cores = [int(c) for c in args.cores.split(",")]
    except ValueError:
        args.cores = []
    if len(args.cores) != 2 or args.cores[0] == args.cores[1]:
        raise SystemExit("compare_builds: error: --cores takes two different core numbers, e.g. 0,1")
    if args.together and not set(args.cores) <= os.sched_getaffinity(0):
        raise SystemExit(f"compare_builds: error: --together needs cores {args.cores}; "
                         f"this process may run on {sorted(os.sched_getaffinity(0))}")

    both = bench_programs(args.a) & bench_programs(args.b)
    programs = sorted(x for x in args.programs.split(",") if x) or sorted(both)
    skip = {x for x in args.skip.split(",") if x}
    programs = [x for x in programs if x not in skip]
    missing = [x for x in programs if x not in both]
    if missing:
        raise SystemExit(f"compare_builds: error: not built in both trees: {', '.join(missing)}")
    if not programs:
        raise SystemExit("compare_builds: error: no bench_* program in both trees")

    results = {}
    for program in programs:
        print(f"# {program}", file=sys.stderr, flush=True)
        samples = {}
        rounds(program, args.filter, args.rounds, 0, args, samples)
        outside = [n for n, s in samples.items() if s["a"] and s["b"] and
                   args.statistic(s["b"]) > args.statistic(s["a"]) * (1 + args.bound)]
        if outside and args.recheck > 0:
            rows = "|".join("^" + re.escape(n) + "$" for n in outside)
            print(f"#   recheck {len(outside)} rows", file=sys.stderr, flush=True)
            rounds(program, rows, args.recheck, args.rounds, args, samples)
        results[program] = samples
        # A long run (every program, with rechecks, takes an hour or more) shows and keeps each
        # program's rows as they finish, so that a stopped run still leaves what it measured.
        for _, line, _, _ in table_rows(program, samples, args):
            print(line, file=sys.stderr, flush=True)
        if args.json:
            write_json(args.json, results)

    print(f"{args.stat} of every sample per row and build\n")
    print(f"| program | row | {args.a_name} ms | {args.b_name} ms | {args.b_name} / {args.a_name} | samples |")
    print("|---|---|---|---|---|---|")
    ratios, over = [], []
    for program, samples in results.items():
        for name, line, ratio, is_over in table_rows(program, samples, args):
            print(line)
            ratios.append(ratio)
            if is_over:
                over.append(f"{program} {name}")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    print(f"\n{len(ratios)} rows; geometric mean {args.b_name}/{args.a_name} = {geo:.3f}; "
          f"{len(over)} rows over the {args.bound:.0%} bound" + (":" if over else "."))
    for o in over:
        print(f"- {o}")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
