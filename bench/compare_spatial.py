"""cvattn against the reference PyTorch modules of issue 19's spatial attention, one thread each.

    /usr/bin/python3 bench/compare_spatial.py [--cvattn build/ci/tools/cvattn/cvattn]
                                              [--rounds 5] [--repeat 20] [--only halo_attn,...]

The references are timm's own classes (source tree at $TIMM_SRC, default /work/timm) and the
plain-torch re-creation of mmcv's GeneralizedAttention in tests/fixtures/spatial.py, on the
shape the issue names ([2, 256, 16, 16]; BAT on [2, 256, 14, 14], its 7x7 blocks). For every op
it writes random weights and input, checks `cvattn run` against the module within
1e-4 + 1e-4*|ref| (a WRONG row has no speed), then alternates PyTorch (torch.set_num_threads(1),
median of --repeat calls after a warm-up) and `cvattn run OP --repeat R --threads 1` for
--rounds rounds. The speed-up is the median of the per-round ratios. Markdown table on stdout.
"""
import argparse
import collections
import os
import statistics
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
sys.path.insert(0, os.environ.get("TIMM_SRC", "/work/timm"))
from compare_torch import check, cvattn_args, default_binary, time_cvattn, time_torch  # noqa: E402
from common import save_safetensors  # noqa: E402
from timm.layers.bottleneck_attn import BottleneckAttn  # noqa: E402
from timm.layers.halo_attn import HaloAttn  # noqa: E402
from timm.layers.lambda_layer import LambdaLayer  # noqa: E402
from timm.layers.non_local_attn import BatNonLocalAttn  # noqa: E402

Case = collections.namedtuple("Case", "op inputs module sets x label")
GEN = torch.Generator().manual_seed(20261201)


def randomized(m, scale=0.1):
    with torch.no_grad():
        for _, p in m.named_parameters():
            p.copy_((torch.rand(p.shape, generator=GEN) * 2 - 1) * scale)
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.copy_(torch.randn(mod.running_mean.shape, generator=GEN) * 0.1)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=GEN) + 0.5)
    return m.eval()


def ga_module(**kw):
    # tests/fixtures/spatial.py runs its fixture cases at import; only the class is needed here.
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "spatial_ga", os.path.join(HERE, "..", "tests", "fixtures", "spatial.py"))
    src = open(spec.origin).read()
    start = src.index("class GeneralizedAttention")
    end = src.index("\ndef ga(")
    ns = {"torch": torch, "nn": nn, "F": torch.nn.functional, "np": np, "math": __import__("math")}
    exec(compile(src[start:end], spec.origin, "exec"), ns)  # noqa: S102 (our own file)
    m = ns["GeneralizedAttention"](256, **kw)
    randomized(m)
    with torch.no_grad():
        m.gamma.fill_(0.5)
    return m


def cases():
    x16 = torch.randn(2, 256, 16, 16, generator=GEN)
    x14 = torch.randn(2, 256, 14, 14, generator=GEN)
    return [
        Case("bottleneck_attn", ["input"], randomized(BottleneckAttn(256, feat_size=(16, 16))),
             {"feat_size": "16,16"}, x16, "bottleneck_attn (4 heads)"),
        Case("halo_attn", ["input"], randomized(HaloAttn(256)), {}, x16,
             "halo_attn (8 heads, block 8, halo 3)"),
        Case("lambda", ["input"], randomized(LambdaLayer(256)), {}, x16, "lambda (r=9)"),
        Case("lambda", ["input"], randomized(LambdaLayer(256, feat_size=(16, 16), r=None)),
             {}, x16, "lambda (relative, 16x16)"),
        Case("generalized_attention", ["input"], ga_module(num_heads=8), {"num_heads": "8"},
             x16, "generalized_attention ('1111', kv_stride 2)"),
        Case("generalized_attention", ["input"], ga_module(num_heads=8, attention_type="1000"),
             {"num_heads": "8", "attention_type": "1000"}, x16, "generalized_attention ('1000')"),
        Case("bat", ["input"], randomized(BatNonLocalAttn(256), 0.3), {}, x14,
             "bat (block 7, [2,256,14,14])"),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cvattn", default=default_binary())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    only = set(filter(None, args.only.split(",")))
    print("| op | PyTorch 1 thread (ms) | cvattn 1 thread (ms) | speed-up |")
    print("|---|---|---|---|")
    for case in cases():
        if only and case.op not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            np.save(os.path.join(folder, "input.npy"), case.x.numpy())
            save_safetensors(case.module.state_dict(), os.path.join(folder, "weights.safetensors"))
            with torch.no_grad():
                ref = case.module(case.x)
            if isinstance(ref, tuple):
                ref = ref[0]
            run = cvattn_args(args.cvattn, case, folder)
            problem = check(run, ref, folder)
            if problem:
                print("| %s | | | WRONG: %s |" % (case.label, problem))
                continue
            fn = (lambda m=case.module, x=case.x: m(x))
            torch_ms, ours_ms, ratios = [], [], []
            for _ in range(args.rounds):
                t = time_torch(fn, args.repeat, args.stat)
                c = time_cvattn(run, args.repeat, 1, args.stat)
                torch_ms.append(t)
                ours_ms.append(c)
                ratios.append(t / c)
            print("| %s | %.2f | %.2f | %.2fx |" % (case.label, statistics.median(torch_ms),
                                                  statistics.median(ours_ms),
                                                  statistics.median(ratios)), flush=True)


if __name__ == "__main__":
    main()
