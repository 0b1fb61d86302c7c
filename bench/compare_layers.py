"""One-thread comparison of cvattn's layers with PyTorch on the shapes of issue 18.

For each case PyTorch (torch.set_num_threads(1)) and `cvattn run OP --repeat R --threads 1` are
timed alternately, REPS times, on the same random input written as .npy; the medians of the
per-run medians are compared. The cases without a CLI op (add with broadcasting, permute, mean)
use bench_layers' Google Benchmark entries instead, when its binary is given.

The machine may be shared: PyTorch is timed in CPU time (time.process_time) so that waiting
for a core does not count; cvattn's --repeat reports wall time, so on a loaded machine its
figures are pessimistic, and the bench_layers rows (CPU time) are the fairer ones. Google
Benchmark reports the mean over a block of calls lasting at least 0.3 s, so the PyTorch side of
those rows is timed the same way (torch_block_ms), not as a median of single calls, which sits
below the mean on a noisy machine and favoured PyTorch.

Run: /usr/bin/python3 bench/compare_layers.py BUILD/tools/cvattn/cvattn [BUILD/bench/bench_layers]
     [--reps 3] [--repeat 20]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

# name, cvattn op and settings, torch function of (x, w, b), input shape, affine shape
CLI_CASES = [
    ("layer_norm [8,197,384] over 384", "layer_norm", [],
     lambda x, w, b: F.layer_norm(x, (384,), w, b), (8, 197, 384), (384,)),
    ("group_norm [8,64,56,56] 32 groups", "group_norm", ["num_groups=32"],
     lambda x, w, b: F.group_norm(x, 32, w, b), (8, 64, 56, 56), (64,)),
    ("gelu [8,197,1536]", "gelu", [], lambda x, w, b: F.gelu(x), (8, 197, 1536), None),
    ("gelu tanh [8,197,1536]", "gelu", ["approximate=tanh"],
     lambda x, w, b: F.gelu(x, approximate="tanh"), (8, 197, 1536), None),
    ("silu [8,197,1536]", "silu", [], lambda x, w, b: F.silu(x), (8, 197, 1536), None),
    ("hardswish [8,197,1536]", "hardswish", [], lambda x, w, b: F.hardswish(x), (8, 197, 1536),
     None),
    ("mish [8,197,1536]", "mish", [], lambda x, w, b: F.mish(x), (8, 197, 1536), None),
    ("interpolate bilinear [8,64,56,56]->112", "interpolate", ["size=112,112", "mode=bilinear"],
     lambda x, w, b: F.interpolate(x, size=(112, 112), mode="bilinear", align_corners=False),
     (8, 64, 56, 56), None),
    ("interpolate bicubic [8,64,56,56]->112", "interpolate", ["size=112,112", "mode=bicubic"],
     lambda x, w, b: F.interpolate(x, size=(112, 112), mode="bicubic", align_corners=False),
     (8, 64, 56, 56), None),
    ("interpolate nearest [8,64,56,56]->112", "interpolate", ["size=112,112"],
     lambda x, w, b: F.interpolate(x, size=(112, 112), mode="nearest"), (8, 64, 56, 56), None),
]

# name, bench_layers entry, torch function of the inputs, input shapes
BENCH_CASES = [
    ("add [8,64,56,56] + [1,64,1,1]", "BM_AddChannelBias/threads:1/real_time",
     lambda a, b: a + b, [(8, 64, 56, 56), (1, 64, 1, 1)]),
    ("add [8,197,384] + [384]", "BM_AddTokenBias/threads:1/real_time", lambda a, b: a + b,
     [(8, 197, 384), (384,)]),
    ("add [8,197,384] + [8,197,384]", "BM_AddSameShape/threads:1/real_time", lambda a, b: a + b,
     [(8, 197, 384), (8, 197, 384)]),
    ("permute [8,64,56,56] NCHW->NHWC", "BM_PermuteNchwToNhwc/threads:1/real_time",
     lambda a: a.permute(0, 2, 3, 1).contiguous(), [(8, 64, 56, 56)]),
    ("mean [8,64,56,56] over H,W", "BM_MeanHw/threads:1/real_time", lambda a: a.mean((2, 3)),
     [(8, 64, 56, 56)]),
    ("mean [8,197,384] over tokens", "BM_MeanTokens/threads:1/real_time", lambda a: a.mean(1),
     [(8, 197, 384)]),
    ("layer_norm [8,197,384] over 384", "BM_LayerNorm/threads:1/real_time",
     lambda a, w, b: F.layer_norm(a, (384,), w, b), [(8, 197, 384), (384,), (384,)]),
    ("group_norm [8,64,56,56] 32 groups", "BM_GroupNorm/threads:1/real_time",
     lambda a, w, b: F.group_norm(a, 32, w, b), [(8, 64, 56, 56), (64,), (64,)]),
    ("layer_norm2d (timm) [8,64,56,56]", "BM_LayerNorm2d/threads:1/real_time",
     lambda a, w, b: F.layer_norm(a.permute(0, 2, 3, 1), (64,), w, b, 1e-6).permute(0, 3, 1, 2),
     [(8, 64, 56, 56), (64,), (64,)]),
    ("gelu [8,197,1536]", "BM_Gelu/threads:1/arg:0/real_time", lambda a: F.gelu(a),
     [(8, 197, 1536)]),
    ("gelu tanh [8,197,1536]", "BM_Gelu/threads:1/arg:1/real_time",
     lambda a: F.gelu(a, approximate="tanh"), [(8, 197, 1536)]),
    ("silu [8,197,1536]", "BM_Activation/threads:1/arg:5/real_time", F.silu, [(8, 197, 1536)]),
    ("hardswish [8,197,1536]", "BM_Activation/threads:1/arg:8/real_time", F.hardswish,
     [(8, 197, 1536)]),
    ("hardsigmoid [8,197,1536]", "BM_Activation/threads:1/arg:9/real_time", F.hardsigmoid,
     [(8, 197, 1536)]),
    ("mish [8,197,1536]", "BM_Activation/threads:1/arg:10/real_time", F.mish, [(8, 197, 1536)]),
    ("interpolate bilinear [8,64,56,56]->112", "BM_Interpolate/threads:1/arg:0/real_time",
     lambda a: F.interpolate(a, size=(112, 112), mode="bilinear", align_corners=False),
     [(8, 64, 56, 56)]),
    ("interpolate bicubic [8,64,56,56]->112", "BM_Interpolate/threads:1/arg:2/real_time",
     lambda a: F.interpolate(a, size=(112, 112), mode="bicubic", align_corners=False),
     [(8, 64, 56, 56)]),
    ("interpolate nearest [8,64,56,56]->112", "BM_Interpolate/threads:1/arg:1/real_time",
     lambda a: F.interpolate(a, size=(112, 112), mode="nearest"), [(8, 64, 56, 56)]),
    ("interpolate bilinear [8,64,112,112]->72", "BM_InterpolateDown/threads:1/arg:0/real_time",
     lambda a: F.interpolate(a, size=(72, 72), mode="bilinear", align_corners=False),
     [(8, 64, 112, 112)]),
    ("interpolate bicubic [8,64,112,112]->72", "BM_InterpolateDown/threads:1/arg:2/real_time",
     lambda a: F.interpolate(a, size=(72, 72), mode="bicubic", align_corners=False),
     [(8, 64, 112, 112)]),
    ("interpolate nearest [8,64,112,112]->72", "BM_InterpolateDown/threads:1/arg:1/real_time",
     lambda a: F.interpolate(a, size=(72, 72), mode="nearest"), [(8, 64, 112, 112)]),
]


def torch_ms(fn, args, repeat):
    """Median CPU milliseconds of fn(*args) over `repeat` runs after one warm-up."""
    with torch.no_grad():
        fn(*args)
        times = []
        for _ in range(repeat):
            t0 = time.process_time()
            fn(*args)
            times.append((time.process_time() - t0) * 1e3)
    return statistics.median(times)


def torch_block_ms(fn, args, min_seconds=0.3):
    """Mean CPU milliseconds per call of fn(*args) over a block of at least min_seconds."""
    with torch.no_grad():
        fn(*args)
        calls, t0 = 0, time.process_time()
        while True:
            fn(*args)
            calls += 1
            spent = time.process_time() - t0
            if spent >= min_seconds:
                return spent * 1e3 / calls


def cvattn_ms(tool, op, settings, files, repeat):
    cmd = [tool, "run", op, "--repeat", str(repeat), "--threads", "1"]
    for name, path in files.items():
        cmd += ["--in", "%s=%s" % (name, path)]
    for s in settings:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def bench_ms(binary, names):
    filt = "^(" + "|".join(n.split("/real")[0] + "/" for n in names) + ")"
    out = subprocess.run([binary, "--benchmark_filter=" + filt, "--benchmark_format=json",
                          "--benchmark_min_time=0.3"], check=True, capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    return {b["name"]: b["cpu_time"] for b in json.loads(out)["benchmarks"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("bench", nargs="?")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="compare_layers_")
    rows = []
    for name, op, settings, fn, shape, affine in CLI_CASES:
        x = rng.standard_normal(shape).astype(np.float32) * 2
        files = {"input": os.path.join(tmp, "input.npy")}
        np.save(files["input"], x)
        w = b = None
        if affine:
            w = rng.standard_normal(affine).astype(np.float32)
            b = rng.standard_normal(affine).astype(np.float32)
            files["weight"] = os.path.join(tmp, "weight.npy")
            files["bias"] = os.path.join(tmp, "bias.npy")
            np.save(files["weight"], w)
            np.save(files["bias"], b)
        tx = torch.from_numpy(x)
        tw = torch.from_numpy(w) if w is not None else None
        tb = torch.from_numpy(b) if b is not None else None
        t_runs, c_runs = [], []
        for _ in range(args.reps):
            t_runs.append(torch_ms(fn, (tx, tw, tb), args.repeat))
            c_runs.append(cvattn_ms(args.tool, op, settings, files, args.repeat))
        rows.append(("cli", name, statistics.median(t_runs), statistics.median(c_runs)))
    if args.bench:
        names = [c[1] for c in BENCH_CASES]
        t_all = {c[0]: [] for c in BENCH_CASES}
        b_all = {c[1]: [] for c in BENCH_CASES}
        for _ in range(args.reps):
            for name, _, fn, shapes in BENCH_CASES:
                tens = [torch.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
                t_all[name].append(torch_block_ms(fn, tens))
            got = bench_ms(args.bench, names)
            for n in names:
                b_all[n].append(got[n])
        for name, entry, _, _ in BENCH_CASES:
            rows.append(("bench", name, statistics.median(t_all[name]),
                         statistics.median(b_all[entry])))
    print("torch %s, one thread; 'cli' rows: cvattn run --repeat (wall ms), 'bench' rows: "
          "bench_layers (CPU ms)" % torch.__version__)
    print("%-6s %-42s %10s %10s %8s" % ("via", "case", "torch ms", "cvattn ms", "speed-up"))
    for via, name, t, c in rows:
        print("%-6s %-42s %10.3f %10.3f %7.2fx" % (via, name, t, c, t / c))


if __name__ == "__main__":
    main()
