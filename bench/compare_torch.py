"""cvattn against PyTorch on the op list of issue 10, one thread each, in one interleaved session.

    /usr/bin/python3 bench/compare_torch.py [--cvattn build/ci/tools/cvattn/cvattn]
                                            [--rounds 5] [--repeat 30] [--threads 2] [--only se,sk]

Needs Debian's python3-torch and python3-torchvision (and `apt-get install libopenblas0-openmp`,
the BLAS PyTorch 1.13 is measured with). For every op it writes the same random inputs and
weights to a temporary folder (.npy, and .safetensors keyed by the PyTorch state_dict names), then

1. runs `cvattn run OP ... --out output=...` once and checks the result against PyTorch's within
   1e-4 + 1e-4*|ref| (a speed figure for a wrong answer is worthless: such a row says WRONG);
2. alternates, for --rounds rounds, PyTorch (torch.set_num_threads(1), warm-up, median wall time
   of --repeat calls) and `cvattn run OP ... --repeat R --threads 1` (which prints its own median
   of R calls after a warm-up, inputs already loaded). The figure per side is the median over the
   rounds; the speed-up is the median of the per-round ratios, since on a shared machine the
   ratio of neighbouring runs holds better than either time. --stat min takes the fastest call
   of each side per round instead of the median (on a loaded machine, closer to a quiet one).

With --threads T it also times cvattn with T threads in every round and adds a column with the
speed-up of T threads over one. An op the cvattn binary does not list (`cvattn list`) gets a row
of "n/a" and is left out of the geometric mean. The output is a markdown table ready to paste.

With --peers ort, rows that export to ONNX (torch.onnx.export, opset 17, 16 for GridSample, fixed
shapes, weights as initialisers) also run under ONNX Runtime (onnxruntime-node, one thread,
bench/ort/run_ort.js; install with `npm install --prefix bench/ort`): its output is checked like
cvattn's and it is timed in the same rounds (PyTorch, cvattn, ORT); two more columns. Without
onnxruntime-node the columns are skipped with a note.

With --peers ncnn (or ort,ncnn), rows whose op ncnn has a layer for (conv2d, grid_sample,
deform_conv2d, and SE composed of Pooling, InnerProduct and BinaryOp) also run under ncnn, built
from source by bench/ncnn/build.sh: bench/ncnn/ncnn_peer builds the layers with ncnn's layer API
and times them on the same .npy files (one thread, fp32, packed layout, NCHW in and out). Its
output is checked like cvattn's, it is timed in the same rounds, and it adds the columns "ncnn ms"
and "cvattn vs ncnn". Without the harness the columns are skipped with a note.
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
from channel import CbamModule, SEModule  # noqa: E402
from channel import randomize as randomize_channel  # noqa: E402
from common import save_safetensors  # noqa: E402
from sk import SelectiveKernel, randomize_batch_norms  # noqa: E402

import ncnn_peer  # noqa: E402
import ort_peer  # noqa: E402

GEN = torch.Generator().manual_seed(20261129)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=GEN) * scale


def rand(*shape, lo=0.0, hi=1.0):
    return torch.rand(*shape, generator=GEN) * (hi - lo) + lo


def mild_theta(n):
    """10 degree rotation, scale 0.9, a small shift: what bench_sampling uses."""
    a, s = math.radians(10.0), 0.9
    t = torch.tensor([[s * math.cos(a), -s * math.sin(a), 0.05],
                      [s * math.sin(a), s * math.cos(a), -0.03]])
    return t.expand(n, 2, 3).contiguous()


class NonLocalAttn(nn.Module):
    """timm layers/non_local_attn.py NonLocalAttn (docs/modules.md §6), plain torch."""

    def __init__(self, c, rd=None):
        super().__init__()
        rd = rd or max(8, int(c / 8 + 4) // 8 * 8)
        self.scale = c ** -0.5
        self.t = nn.Conv2d(c, rd, 1)
        self.p = nn.Conv2d(c, rd, 1)
        self.g = nn.Conv2d(c, rd, 1)
        self.z = nn.Conv2d(rd, c, 1)
        self.norm = nn.BatchNorm2d(c)

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.t(x).view(b, -1, h * w).permute(0, 2, 1)
        p = self.p(x).view(b, -1, h * w)
        g = self.g(x).view(b, -1, h * w).permute(0, 2, 1)
        att = torch.softmax(torch.bmm(t, p) * self.scale, dim=-1)
        o = torch.bmm(att, g).permute(0, 2, 1).reshape(b, -1, h, w)
        return self.norm(self.z(o)) + x


def module_weights(m):
    """Random parameters and BatchNorm statistics (a trained block's gates are not saturated)."""
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(randn(*p.shape, scale=0.1))
        for sub in m.modules():
            if isinstance(sub, nn.BatchNorm2d):
                sub.weight.copy_(rand(sub.num_features, lo=0.5, hi=1.5))
                sub.running_var.copy_(rand(sub.num_features, lo=0.5, hi=2.0))
    return m.eval()


def sdpa(q, k, v):
    # PyTorch 1.13 has no F.scaled_dot_product_attention: this is its math path.
    w = torch.softmax(q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5), dim=-1)
    return w @ v, w


class Graph(nn.Module):
    """What --peers ort exports for a row: fn(*tensors) over the row's inputs named in `names`
    (graph input names, fed from the same .npy files); `owner` holds fn's parameters."""

    def __init__(self, fn, names, owner=None, opset=17):
        super().__init__()
        self.fn, self.names, self.owner, self.opset = fn, names, owner, opset

    def forward(self, *tensors):
        return self.fn(*tensors)


class Case:
    """One table row: tensors (name -> torch tensor) for --in, an optional module for --weights,
    --set settings, and fn() giving the PyTorch output that cvattn's "output" must match;
    graph, a Graph, when the row also runs under ONNX Runtime."""

    def __init__(self, key, op, shape, fn, inputs, module=None, sets=None, note="", flops=0,
                 nbytes=0, graph=None):
        self.key, self.op, self.shape, self.fn, self.graph = key, op, shape, fn, graph
        self.inputs, self.module, self.sets, self.note = inputs, module, sets or {}, note
        # The work the op cannot avoid, for the "% of limit" column: GEMM-like ops count the
        # multiply-adds of the direct computation x 2 (against single-core SGEMM), memory-bound
        # ops the bytes of their inputs read once and outputs written once (against copy
        # bandwidth, whose bytes count the same way).
        self.flops, self.nbytes = flops, nbytes


def conv_graph(w, b):
    """conv2d for ONNX Runtime: the weights as initialisers, as a deployed model has them."""
    conv = nn.Conv2d(w.shape[1], w.shape[0], w.shape[2], padding=1)
    with torch.no_grad():
        conv.weight.copy_(w)
        conv.bias.copy_(b)
    return Graph(lambda x, m=conv: m(x), ["input"], conv.eval())


def cases():
    out = []

    x = randn(1, 64, 128, 128)
    g = F.affine_grid(mild_theta(1), [1, 64, 128, 128], align_corners=False)
    out.append(Case("grid_sample_64", "grid_sample", "[1,64,128,128]",
                    lambda x=x, g=g: F.grid_sample(x, g, align_corners=False),
                    {"input": x, "grid": g}, note="bilinear, zeros",
                    nbytes=4 * (2 * x.numel() + g.numel()),
                    graph=Graph(lambda x, g: F.grid_sample(x, g, align_corners=False),
                                ["input", "grid"], opset=16)))
    for mode in ("nearest", "bicubic"):  # the channel-group kernels (issue 17) per mode
        out.append(Case(f"grid_sample_64_{mode}", "grid_sample", "[1,64,128,128]",
                        lambda x=x, g=g, m=mode: F.grid_sample(x, g, mode=m, align_corners=False),
                        {"input": x, "grid": g}, sets={"mode": mode}, note=f"{mode}, zeros",
                        nbytes=4 * (2 * x.numel() + g.numel())))
    x = randn(8, 3, 224, 224)
    g = F.affine_grid(mild_theta(8), [8, 3, 224, 224], align_corners=False)
    out.append(Case("grid_sample_8x3", "grid_sample", "[8,3,224,224]",
                    lambda x=x, g=g: F.grid_sample(x, g, align_corners=False),
                    {"input": x, "grid": g}, note="bilinear, zeros",
                    nbytes=4 * (2 * x.numel() + g.numel()),
                    graph=Graph(lambda x, g: F.grid_sample(x, g, align_corners=False),
                                ["input", "grid"], opset=16)))
    th = mild_theta(8)
    out.append(Case("affine_grid", "affine_grid", "[8,3,224,224]",
                    lambda th=th: F.affine_grid(th, [8, 3, 224, 224], align_corners=False),
                    {"theta": th}, sets={"size": "8,3,224,224"}, nbytes=4 * 8 * 224 * 224 * 2,
                    graph=Graph(lambda th: F.affine_grid(th, [8, 3, 224, 224],
                                                         align_corners=False), ["theta"])))

    x = randn(1, 64, 56, 56)
    w = randn(64, 64, 3, 3, scale=0.05)
    b = randn(64, scale=0.1)
    out.append(Case("conv2d", "conv2d", "[1,64,56,56]",
                    lambda x=x, w=w, b=b: F.conv2d(x, w, b, padding=1),
                    {"input": x, "weight": w, "bias": b}, sets={"padding": "1"},
                    note="3x3, 64->64, pad 1", flops=2 * 64 * 64 * 9 * 56 * 56,
                    graph=conv_graph(w, b)))

    from torchvision.ops import deform_conv2d
    off = rand(1, 18, 56, 56, lo=-2.0, hi=2.0)
    mask = rand(1, 9, 56, 56)
    out.append(Case("deform_conv2d", "deform_conv2d", "[1,64,56,56]",
                    lambda x=x, o=off, w=w, b=b, m=mask: deform_conv2d(x, o, w, b, padding=1,
                                                                       mask=m),
                    {"input": x, "offset": off, "weight": w, "bias": b, "mask": mask},
                    sets={"padding": "1"}, note="v2 (mask), 3x3, 64->64",
                    flops=2 * 64 * 64 * 9 * 56 * 56,
                    graph=Graph(lambda x, o, m, w=w, b=b: deform_conv2d(x, o, w, b, padding=1,
                                                                        mask=m),
                                ["input", "offset", "mask"])))

    x = randn(8, 256, 28, 28)
    gen = torch.Generator().manual_seed(7)
    se = randomize_channel(SEModule(256), gen)
    out.append(Case("se", "se", "[8,256,28,28]", lambda x=x, m=se: m(x)[0], {"input": x}, se,
                    note="timm SEModule", nbytes=4 * 2 * x.numel(),
                    graph=Graph(lambda x, m=se: m(x)[0], ["input"], se)))
    cbam = randomize_channel(CbamModule(256), gen)
    out.append(Case("cbam", "cbam", "[8,256,28,28]", lambda x=x, m=cbam: m(x)[0], {"input": x},
                    cbam, note="timm CbamModule", nbytes=4 * 2 * x.numel(),
                    graph=Graph(lambda x, m=cbam: m(x)[0], ["input"], cbam)))

    x = randn(1, 64, 56, 56)
    sk = SelectiveKernel(64)
    randomize_batch_norms(sk, gen)
    out.append(Case("sk", "sk", "[1,64,56,56]", lambda x=x, m=sk: m(x), {"input": x}, sk,
                    note="timm SelectiveKernel, 2 paths", flops=2 * 2 * 64 * 32 * 9 * 56 * 56,
                    graph=Graph(lambda x, m=sk: m(x), ["input"], sk)))

    q, k, v = randn(8, 8, 196, 32), randn(8, 8, 196, 32), randn(8, 8, 196, 32)
    out.append(Case("sdpa", "scaled_dot_product_attention", "[8,8,196,32]",
                    lambda q=q, k=k, v=v: sdpa(q, k, v)[0], {"query": q, "key": k, "value": v},
                    note="softmax(QK^T/sqrt(E))V", flops=2 * 2 * 64 * 196 * 196 * 32,
                    graph=Graph(lambda q, k, v: sdpa(q, k, v)[0], ["query", "key", "value"])))

    x = randn(8, 196, 256)
    mha = module_weights(nn.MultiheadAttention(256, 8, batch_first=True))
    out.append(Case("mha", "mha", "[8,196,256]", lambda x=x, m=mha: m(x, x, x)[0],
                    {"query": x, "key": x, "value": x}, mha, sets={"num_heads": "8"},
                    note="8 heads, self-attention, averaged weights",
                    flops=2 * (4 * 1568 * 256 * 256 + 2 * 64 * 196 * 196 * 32),
                    graph=Graph(lambda x, m=mha: m(x, x, x)[0], ["query"], mha)))

    x = randn(2, 64, 28, 28)
    nl = module_weights(NonLocalAttn(64))
    out.append(Case("nonlocal", "nonlocal", "[2,64,28,28]", lambda x=x, m=nl: m(x), {"input": x},
                    nl, note="timm NonLocalAttn",
                    flops=2 * (2 * 784 * 64 * 8 * 4 + 2 * 2 * 784 * 784 * 8),
                    graph=Graph(lambda x, m=nl: m(x), ["input"], nl)))
    return out


def time_torch(fn, repeat, stat):
    with torch.no_grad():
        for _ in range(3):
            fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return min(times) if stat == "min" else statistics.median(times)


def input_files(case, folder):
    """Input name -> .npy path. One tensor passed as several inputs (self-attention's
    m(x, x, x)) is one file named by each, so cvattn shares it as PyTorch does."""
    files, first = {}, {}
    for name, t in case.inputs.items():
        files[name] = first.setdefault(id(t), os.path.join(folder, name + ".npy"))
    return files


def cvattn_args(binary, case, folder):
    args = [binary, "run", case.op]
    for name, path in input_files(case, folder).items():
        args += ["--in", "%s=%s" % (name, path)]
    if case.module is not None:
        args += ["--weights", os.path.join(folder, "weights.safetensors")]
    for key, value in case.sets.items():
        args += ["--set", "%s=%s" % (key, value)]
    return args


def time_cvattn(args, repeat, threads, stat):
    res = subprocess.run(args + ["--repeat", str(repeat), "--threads", str(threads)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip())
    return json.loads(res.stdout.strip().splitlines()[-1])[stat + "_ms"]


def check(args, ref, folder):
    path = os.path.join(folder, "cvattn_output.npy")
    res = subprocess.run(args + ["--out", "output=" + path], capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        return "error: " + res.stderr.strip()
    got = np.load(path)
    ref = ref.detach().numpy()
    if got.shape != ref.shape:
        return "shape %s, PyTorch %s" % (list(got.shape), list(ref.shape))
    excess = np.abs(got - ref) - (1e-4 + 1e-4 * np.abs(ref))
    if not np.all(excess <= 0):
        i = np.unravel_index(np.argmax(excess), ref.shape)
        return "differs at %s: %g vs %g" % (list(i), got[i], ref[i])
    return None


def ort_command(case, ref, folder, row, notes):
    """Exports the row's graph and checks ONNX Runtime's output against PyTorch's like cvattn's:
    the run_ort.js command to time, or None (the reason in the row's ORT cell and the notes)."""
    if case.graph is None:
        row["ort_status"] = "n/a"
        return None
    path = os.path.join(folder, "model.onnx")
    err = ort_peer.export(case.graph.eval(), [case.inputs[n] for n in case.graph.names], path,
                          case.graph.names, case.graph.opset)
    if err:
        row["ort_status"] = "no export"
        notes.append("%s: torch.onnx.export (opset %d) failed: %s" % (case.key, case.graph.opset,
                                                                      err))
        return None
    cmd = ort_peer.command(path, {n: os.path.join(folder, n + ".npy") for n in case.graph.names})
    ref = ref.detach().numpy()
    err = ort_peer.check(cmd, ref, os.path.join(folder, "ort_output.npy"),
                         1e-4 + 1e-4 * np.abs(ref))
    if err:
        row["ort_status"] = "WRONG"
        notes.append("%s: ONNX Runtime %s" % (case.key, err.replace("|", "/")[:160]))
        return None
    return cmd


def ncnn_command(case, ref, folder, row, notes):
    """Checks ncnn's output for the row against PyTorch's like cvattn's: the ncnn_peer command to
    time, or None (the reason in the row's ncnn cell, and for a failure in the notes)."""
    cmd = ncnn_peer.command(case, folder)
    if cmd is None:
        row["ncnn_status"] = "n/a"
        return None
    ref = ref.detach().numpy()
    err = ncnn_peer.check(cmd, ref, os.path.join(folder, "ncnn_output.npy"),
                          1e-4 + 1e-4 * np.abs(ref))
    if err:
        row["ncnn_status"] = "WRONG: " + err.replace("|", "/")[:160]
        notes.append("%s: ncnn %s" % (case.key, err.replace("|", "/")[:160]))
        return None
    return cmd


def listed_ops(binary):
    try:
        res = subprocess.run([binary, "list"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("compare_torch.py: cannot run `%s list` (%s); build cvattn_tool or pass --cvattn"
                 % (binary, e))
    return {line.split()[0] for line in res.stdout.splitlines() if line.strip()}


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        flags = ", ".join(x for x in ("avx512f", "avx2", "fma") if " %s " % x in text + " ")
    except OSError:
        pass
    return "%s (%s), %d cores" % (model, flags.upper() or "no AVX", os.cpu_count() or 0)


def measure_limits(binary, spec):
    """One core's copy bandwidth (GB/s, bytes read + written, the faster of memcpy and streaming
    stores over 64 MiB) and SGEMM rate (GFLOP/s, 1024^3, the faster of Eigen at the bench's
    compile-time ISA and the library's own product, OpenBLAS where built with it):
    given as "GBPS,GFLOPS", or measured by bench_limits beside the cvattn binary (the best of 3
    repetitions, on CPU time so that a busy machine does not lower them). None when unknown."""
    if spec == "none":
        return None
    if spec != "auto":
        gbps, gflops = (float(v) for v in spec.split(","))
        return gbps, gflops
    exe = os.path.join(os.path.dirname(os.path.abspath(binary)), "..", "..", "bench",
                       "bench_limits")
    if not os.path.exists(exe):
        return None
    res = subprocess.run([exe, "--benchmark_filter=BM_Copy.*/threads:1|BM_Sgemm.*/n:1024",
                          "--benchmark_repetitions=3", "--benchmark_format=json"],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return None
    best = {}
    for b in json.loads(res.stdout)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        seconds = b["cpu_time"] * {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        if b["name"].startswith("BM_Copy"):  # memcpy or streaming stores, whichever is faster
            rate = 2 * (64 << 20) / seconds * 1e-9
            best["copy"] = max(best.get("copy", 0.0), rate)
        else:
            rate = 2 * 1024.0 ** 3 / seconds * 1e-9
            best["gemm"] = max(best.get("gemm", 0.0), rate)
    if "copy" not in best or "gemm" not in best:
        return None
    return best["copy"], best["gemm"]


def of_limit(case, ms, limits):
    """cvattn's time against the time the op's unavoidable work takes at the machine's limit."""
    if ms is None or limits is None or not (case.flops or case.nbytes):
        return "n/a"
    if case.flops:
        return "%.0f%% of SGEMM" % (100.0 * case.flops / (limits[1] * 1e9) / (ms * 1e-3))
    return "%.0f%% of copy" % (100.0 * case.nbytes / (limits[0] * 1e9) / (ms * 1e-3))


def cvattn_info(binary):
    res = subprocess.run([binary, "info"], capture_output=True, text=True, check=False)
    lines = [l.strip() for l in res.stdout.splitlines() if l.strip()]
    return ", ".join(l for l in lines if not l.startswith("OpenMP")) or "unknown"


def default_binary():
    for preset in ("release", "ci"):
        path = os.path.join(HERE, "..", "build", preset, "tools", "cvattn", "cvattn")
        if os.path.exists(path):
            return os.path.normpath(path)
    return "cvattn"


def fmt(v, digits=2):
    return "n/a" if v is None else ("%.*f" % (digits, v))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cvattn", default=default_binary(), help="path of the cvattn binary")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per op")
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per side and round")
    parser.add_argument("--threads", type=int, default=0,
                        help="also time cvattn with this many threads (scaling column)")
    parser.add_argument("--stat", choices=["median", "min"], default="median",
                        help="per-round figure of each side: the median of the calls, or the "
                             "fastest (closer to a quiet machine when others load this one)")
    parser.add_argument("--only", default="", help="comma-separated row keys to run")
    parser.add_argument("--limits", default="auto",
                        help="'auto' (run bench_limits beside the cvattn binary), 'none', or "
                             "'GBPS,GFLOPS': one core's copy bandwidth and SGEMM rate")
    parser.add_argument("--peers", default="",
                        help="'ort': also run ONNX Runtime (onnxruntime-node) on the rows that "
                             "export to ONNX; 'ncnn': also run ncnn (bench/ncnn/build.sh) on the "
                             "rows it has layers for; both: 'ort,ncnn'")
    parser.add_argument("--keep", metavar="DIR",
                        help="write the inputs to DIR/<row key>/ and keep them (default: a "
                             "temporary folder)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    use_ort = "ort" in args.peers.split(",")
    notes = []
    if use_ort and ort_peer.missing():
        notes.append("ONNX Runtime columns skipped: %s." % ort_peer.missing())
        use_ort = False
    use_ncnn = "ncnn" in args.peers.split(",")
    if use_ncnn and ncnn_peer.missing():
        notes.append("ncnn columns skipped: %s." % ncnn_peer.missing())
        use_ncnn = False
    ncnn_info = {}  # row key -> ncnn_peer's elempack and dispatched ISA, for the peer line
    ops = listed_ops(args.cvattn)
    limits = measure_limits(args.cvattn, args.limits)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cvattn_cmp_") as scratch:
        tmp = args.keep or scratch
        for case in cases():
            if args.only and case.key not in args.only.split(","):
                continue
            row = {"case": case, "torch": None, "cv": None, "ratio": None, "cvT": None,
                   "scale": None, "status": "", "ort": None, "ort_wall": None, "ort_ratio": None,
                   "ort_status": "", "ncnn": None, "ncnn_ratio": None, "ncnn_status": ""}
            rows.append(row)
            if case.op not in ops:
                row["status"] = "not in this cvattn"
                continue
            folder = os.path.join(tmp, case.key)
            os.makedirs(folder, exist_ok=True)
            files = input_files(case, folder)
            for name, t in case.inputs.items():
                if files[name] != os.path.join(folder, name + ".npy"):
                    continue  # the same tensor as an earlier input: its file serves both
                np.save(files[name],
                        np.ascontiguousarray(t.numpy(), dtype=np.float32))
            if case.module is not None:
                save_safetensors(case.module.state_dict(),
                                 os.path.join(folder, "weights.safetensors"))
            cmd = cvattn_args(args.cvattn, case, folder)
            with torch.no_grad():
                ref = case.fn()
            ort_cmd = ort_command(case, ref, folder, row, notes) if use_ort else None
            ncnn_cmd = ncnn_command(case, ref, folder, row, notes) if use_ncnn else None
            err = check(cmd, ref, folder)
            if err:
                row["status"] = "WRONG: " + err.replace("|", "/")[:160]
                continue
            t_torch, t_cv, ratios, t_cvT, scales = [], [], [], [], []
            t_ort, t_ort_wall, ort_ratios = [], [], []
            t_ncnn, ncnn_ratios = [], []
            try:
                for _ in range(args.rounds):
                    a = time_torch(case.fn, args.repeat, args.stat)
                    c = time_cvattn(cmd, args.repeat, 1, args.stat)
                    t_torch.append(a)
                    t_cv.append(c)
                    ratios.append(a / c)
                    if ort_cmd:
                        o, w = ort_peer.times(ort_peer.run(ort_cmd, args.repeat), args.stat)
                        t_ort.append(o)
                        t_ort_wall.append(w)
                        ort_ratios.append(o / c)
                    if ncnn_cmd:
                        res = ncnn_peer.run(ncnn_cmd, args.repeat)
                        n = ncnn_peer.times(res, args.stat)
                        ncnn_info[case.key] = (res.get("elempack"), res.get("isa"))
                        t_ncnn.append(n)
                        ncnn_ratios.append(n / c)
                    if args.threads > 1:
                        ct = time_cvattn(cmd, args.repeat, args.threads, args.stat)
                        t_cvT.append(ct)
                        scales.append(c / ct)
            except (RuntimeError, ValueError, KeyError) as e:  # a failing run: say so in its row
                row["status"] = "ERROR: %s" % str(e).replace("|", "/")[:120]
                continue
            row.update(torch=statistics.median(t_torch), cv=statistics.median(t_cv),
                       ratio=statistics.median(ratios))
            if scales:
                row.update(cvT=statistics.median(t_cvT), scale=statistics.median(scales))
            if t_ort:
                row.update(ort=statistics.median(t_ort), ort_wall=statistics.median(t_ort_wall),
                           ort_ratio=statistics.median(ort_ratios))
            if t_ncnn:
                row.update(ncnn=statistics.median(t_ncnn),
                           ncnn_ratio=statistics.median(ncnn_ratios))
            print("# %-16s torch %8.3f ms  cvattn %8.3f ms  %5.2fx" %
                  (case.key, row["torch"], row["cv"], row["ratio"]), file=sys.stderr)

    import torchvision
    print("Machine: %s; %s; Python %s, PyTorch %s, torchvision %s (1 thread); %s." %
          (machine(), datetime.date.today().isoformat(), platform.python_version(),
           torch.__version__, torchvision.__version__, cvattn_info(args.cvattn)))
    if use_ort:
        print("Peer: ONNX Runtime %s (onnxruntime-node, CPU, intra/inter-op threads 1, graph "
              "optimisation 'all', exported opset 17, GridSample 16). ORT ms is its own time per "
              "run (its profiler), ORT via Node the wall time of session.run() in "
              "onnxruntime-node (adds the binding's conversion of inputs and outputs); "
              "\"cvattn vs ORT\" = ORT ms / cvattn ms, median of the per-round ratios." %
              ort_peer.version())
    if use_ncnn:
        packs = {}
        for key, (pack, _) in ncnn_info.items():
            packs.setdefault(pack, []).append(key)
        isas = sorted({isa for _, isa in ncnn_info.values() if isa})
        print("Peer: ncnn %s, built from source by bench/ncnn/build.sh (static, CPU only, runtime "
              "ISA dispatch: %s kernels; only the layers used), run by bench/ncnn/ncnn_peer "
              "through its layer API (Convolution, GridSample, DeformableConv2D; SE as Pooling, "
              "InnerProduct + ReLU, InnerProduct + sigmoid, BinaryOp), 1 thread, fp32 (no fp16, "
              "bf16 or int8), packed layout (elempack %s), pool allocators. NCHW in and out: the "
              "timed call includes converting the data input to the packed layout and the output "
              "back (convert_packing), and loops over the images of a batch; offsets, mask and "
              "grid are passed as PyTorch lays them out. ncnn ms is the harness's own time per "
              "call; \"cvattn vs ncnn\" = ncnn ms / cvattn ms, median of the per-round ratios." %
              (ncnn_peer.version(), "/".join(isas) or "unknown",
               "; ".join("%s: %s" % (p, ", ".join(k)) for p, k in sorted(packs.items()))
               or "n/a"))
    print("Wall-clock %s of %d calls per side and round, median over %d interleaved rounds; "
          "speed-up = median of the per-round ratios." %
          ("minimum" if args.stat == "min" else "median", args.repeat, args.rounds))
    if limits:
        print("Limits of one core (bench_limits): copy %.1f GB/s (read + write), SGEMM "
              "%.1f GFLOP/s (the faster of Eigen and the library's GEMM); \"of limit\" = the "
              "op's unavoidable work at that rate / cvattn's time (direct-convolution FLOPs, so "
              "Winograd can pass 100%%)." % limits)
    print()
    head = "| op | shape | PyTorch ms | cvattn ms | speed-up | cvattn of limit |"
    line = "|---|---|---|---|---|---|"
    if args.threads > 1:
        head += " cvattn %d threads ms | %d vs 1 thread |" % (args.threads, args.threads)
        line += "---|---|"
    if use_ort:
        head += " ORT ms | ORT via Node ms | cvattn vs ORT |"
        line += "---|---|---|"
    if use_ncnn:
        head += " ncnn ms | cvattn vs ncnn |"
        line += "---|---|"
    print(head)
    print(line)
    good = []
    for row in rows:
        case = row["case"]
        name = "`%s`" % case.op + (" (%s)" % case.note if case.note else "")
        ratio = "n/a" if row["ratio"] is None else "%.2fx" % row["ratio"]
        if row["status"]:
            ratio = row["status"] if row["status"].startswith(("WRONG", "ERROR")) else "n/a"
        cells = [name, case.shape, fmt(row["torch"]), fmt(row["cv"]), ratio,
                 of_limit(case, row["cv"], limits)]
        if args.threads > 1:
            cells += [fmt(row["cvT"]), "n/a" if row["scale"] is None else "%.2fx" % row["scale"]]
        if use_ort:
            status = row["ort_status"]
            cells += [status or fmt(row["ort"]), status or fmt(row["ort_wall"]),
                      "n/a" if row["ort_ratio"] is None else "%.2fx" % row["ort_ratio"]]
        if use_ncnn:
            status = row["ncnn_status"]
            cells += [status or fmt(row["ncnn"]),
                      "n/a" if row["ncnn_ratio"] is None else "%.2fx" % row["ncnn_ratio"]]
        print("| " + " | ".join(cells) + " |")
        if row["ratio"] is not None:
            good.append(row)
    if good:
        geo = math.exp(sum(math.log(r["ratio"]) for r in good) / len(good))
        cells = ["**geometric mean** (%d ops)" % len(good), "", "", "", "**%.2fx**" % geo, ""]
        if args.threads > 1:
            scaled = [r["scale"] for r in good if r["scale"]]
            gs = math.exp(sum(map(math.log, scaled)) / len(scaled)) if scaled else None
            cells += ["", "n/a" if gs is None else "%.2fx" % gs]
        if use_ort:
            peer = [r["ort_ratio"] for r in good if r["ort_ratio"]]
            go = math.exp(sum(map(math.log, peer)) / len(peer)) if peer else None
            cells += ["", "", "n/a" if go is None else "**%.2fx** (%d ops)" % (go, len(peer))]
        if use_ncnn:
            peer = [r["ncnn_ratio"] for r in good if r["ncnn_ratio"]]
            gn = math.exp(sum(map(math.log, peer)) / len(peer)) if peer else None
            cells += ["", "n/a" if gn is None else "**%.2fx** (%d ops)" % (gn, len(peer))]
        print("| " + " | ".join(cells) + " |")
    missing = [r["case"].op for r in rows if r["status"] == "not in this cvattn"]
    if missing:
        print()
        print("n/a: not offered by this cvattn binary: %s." % ", ".join(sorted(set(missing))))
    for note in notes:
        print()
        print(note)


if __name__ == "__main__":
    main()
