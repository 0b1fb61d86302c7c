"""cvattn against timm (PyTorch) for timm's gates and dynamic convolution, one thread each.

    /usr/bin/python3 bench/compare_gates.py [--cvattn build/ci/tools/cvattn/cvattn]
                                            [--rounds 5] [--repeat 20] [--only ese,gc]

The shapes are issue 19's: [8, 256, 28, 28] for the gates, a 64 -> 64 3x3 dynamic convolution
(and CondConv2d) with K = 4 on [8, 64, 56, 56]. The reference modules are timm's own classes
(/work/timm, commit aa4b5850; GatherExcite mended as in tests/fixtures/gates.py) and the §17
dynamic convolution of tests/fixtures/gates.py. For every op it writes random inputs and weights
(the module's state_dict) to a temporary folder, checks `cvattn run` against PyTorch within
1e-4 + 1e-4*|ref| (a wrong answer gets the row WRONG), then alternates for --rounds rounds the
PyTorch median of --repeat calls (torch.set_num_threads(1)) and `cvattn run OP --repeat R
--threads 1`. Figures are the medians over the rounds; the speed-up is the median of the
per-round ratios. Prints a markdown table.
"""
import argparse
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
import gates as G  # noqa: E402  (timm imports and the mended GatherExcite)
from common import save_safetensors  # noqa: E402
from compare_torch import check, default_binary, time_cvattn, time_torch  # noqa: E402

GATE_SHAPE = (8, 256, 28, 28)
CONV_SHAPE = (8, 64, 56, 56)


def cases():
    gen = torch.Generator().manual_seed(1919)
    G.GEN = gen

    def module(m):
        return G.randomize(m)

    x = torch.randn(GATE_SHAPE, generator=gen)
    xc = torch.randn(CONV_SHAPE, generator=gen)
    routing = torch.sigmoid(torch.randn((CONV_SHAPE[0], 4), generator=gen))
    out = []

    def add(op, m, inputs, call, sets=None):
        out.append((op, m, inputs, call, sets or {}))

    c = GATE_SHAPE[1]
    m = module(G.EffectiveSEModule(c))
    add("ese", m, {"input": x}, lambda m=m: m(x))
    m = module(G.CecaModule(c))
    add("ceca", m, {"input": x}, lambda m=m: m(x))
    m = module(G.GatherExcite(c))
    add("ge", m, {"input": x}, lambda m=m: m(x))
    m = module(G.GatherExcite(c, extent=4, extra_params=True))
    add("ge", m, {"input": x}, lambda m=m: m(x), {"extent": 4})
    m = module(G.GlobalContext(c, fuse_add=True))
    add("gc", m, {"input": x}, lambda m=m: m(x))
    m = module(G.LightCbamModule(c))
    add("lcbam", m, {"input": x}, lambda m=m: m(x))
    m = module(G.CoordAttn(c))
    add("coord_attn", m, {"input": x}, lambda m=m: m(x))
    m = module(G.SplitAttn(c, c // 2, groups=1, radix=2, norm_layer=nn.BatchNorm2d))
    add("splat", m, {"input": x}, lambda m=m: m(x))
    m = module(G.DynamicConv2d(64, 64, (3, 3), K=4, hidden=16, padding=1))
    add("dynamic_conv", m, {"input": xc}, lambda m=m: m(xc)[0], {"padding": 1})
    m = module(G.CondConv2d(64, 64, 3, num_experts=4))
    add("cond_conv", m, {"input": xc, "routing_weights": routing}, lambda m=m: m(xc, routing))
    return out


def label(op, sets):
    return op + "".join(" %s=%s" % kv for kv in sets.items())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cvattn", default=default_binary())
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--only", default="")
    a = p.parse_args()
    torch.set_num_threads(1)
    only = set(a.only.split(",")) if a.only else None
    print("| op | input | PyTorch 1 thread (ms) | cvattn 1 thread (ms) | speed-up |")
    print("|---|---|---|---|---|")
    for op, m, inputs, call, sets in cases():
        if only and op not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            for name, t in inputs.items():
                np.save(os.path.join(folder, name + ".npy"), t.numpy())
            save_safetensors(m.state_dict(), os.path.join(folder, "weights.safetensors"))
            args = [a.cvattn, "run", op, "--weights", os.path.join(folder, "weights.safetensors")]
            for name in inputs:
                args += ["--in", "%s=%s" % (name, os.path.join(folder, name + ".npy"))]
            for k, v in sets.items():
                args += ["--set", "%s=%s" % (k, v)]
            with torch.no_grad():
                ref = call()
            shape = list(inputs["input"].shape)
            problem = check(args, ref, folder)
            if problem:
                print("| %s | %s | WRONG: %s | | |" % (label(op, sets), shape, problem))
                continue
            ts, cs, ratios = [], [], []
            for _ in range(a.rounds):
                t = time_torch(call, a.repeat, "median")
                cv = time_cvattn(args, a.repeat, 1, "median")
                ts.append(t)
                cs.append(cv)
                ratios.append(t / cv)
            print("| %s | %s | %.3f | %.3f | %.2fx |" % (
                label(op, sets), shape, statistics.median(ts), statistics.median(cs),
                statistics.median(ratios)), flush=True)


if __name__ == "__main__":
    main()
