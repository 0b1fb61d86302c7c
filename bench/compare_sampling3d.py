"""cvattn against PyTorch 1.13 on volumetric grid_sample / affine_grid, one thread each,
interleaved rounds (the method and helpers of bench/compare_torch.py).

    /usr/bin/python3 bench/compare_sampling3d.py [--cvattn build/ci/tools/cvattn/cvattn]
                                                 [--rounds 5] [--repeat 20] [--stat median|min]

Shape [1, 16, 32, 32, 32], grid from a mild 3-D affine theta (10 degree rotation about z, scale
0.9, a small shift). Each row is first checked against PyTorch within 1e-4 + 1e-4*|ref|.
"""
import argparse
import math
import os
import statistics
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_torch import (Case, check, cvattn_args, default_binary, machine,  # noqa: E402
                           time_cvattn, time_torch)

GEN = torch.Generator().manual_seed(2121)
SHAPE = [1, 16, 32, 32, 32]


def mild_theta3d(n):
    a, s = math.radians(10.0), 0.9
    t = torch.tensor([[s * math.cos(a), -s * math.sin(a), 0.0, 0.05],
                      [s * math.sin(a), s * math.cos(a), 0.0, -0.03],
                      [0.0, 0.0, s, 0.02]])
    return t.expand(n, 3, 4).contiguous()


def cases():
    x = torch.randn(*SHAPE, generator=GEN)
    th = mild_theta3d(SHAPE[0])
    g = F.affine_grid(th, SHAPE, align_corners=False)
    out = []
    for mode in ("bilinear", "nearest"):
        out.append(Case(f"grid_sample3d_{mode}", "grid_sample", str(SHAPE).replace(" ", ""),
                        lambda x=x, g=g, m=mode: F.grid_sample(x, g, mode=m, align_corners=False),
                        {"input": x, "grid": g}, sets={"mode": mode},
                        note="trilinear" if mode == "bilinear" else "nearest"))
    out.append(Case("affine_grid3d", "affine_grid", str(SHAPE).replace(" ", ""),
                    lambda th=th: F.affine_grid(th, SHAPE, align_corners=False), {"theta": th},
                    sets={"size": ",".join(map(str, SHAPE))}))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cvattn", default=default_binary())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print("Machine: %s; PyTorch %s, 1 thread each; %s of %d calls, median over %d interleaved "
          "rounds.\n" % (machine(), torch.__version__, args.stat, args.repeat, args.rounds))
    print("| op | shape | PyTorch ms | cvattn ms | speed-up |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="cvattn_cmp3d_") as tmp:
        for case in cases():
            folder = os.path.join(tmp, case.key)
            os.makedirs(folder)
            for name, t in case.inputs.items():
                np.save(os.path.join(folder, name + ".npy"), t.numpy().astype(np.float32))
            cmd = cvattn_args(args.cvattn, case, folder)
            with torch.no_grad():
                err = check(cmd, case.fn(), folder)
            if err:
                print("| %s (%s) | %s | | | WRONG: %s |" % (case.op, case.note, case.shape, err))
                continue
            ta, tc, ratios = [], [], []
            for _ in range(args.rounds):
                a = time_torch(case.fn, args.repeat, args.stat)
                c = time_cvattn(cmd, args.repeat, 1, args.stat)
                ta.append(a)
                tc.append(c)
                ratios.append(a / c)
            label = case.op + (" (%s)" % case.note if case.note else "")
            print("| %s | %s | %.3f | %.3f | %.2fx |" % (label, case.shape, statistics.median(ta),
                                                       statistics.median(tc),
                                                       statistics.median(ratios)))


if __name__ == "__main__":
    main()
