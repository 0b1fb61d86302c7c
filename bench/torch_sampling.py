"""PyTorch baseline for bench_sampling: same shapes, same theta (and the zoom_out rows' scale 2.0
for bilinear), one thread.

Run: OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_sampling.py [--forward] [mode ...]
(--forward skips affine_grid and the backward; modes default to bilinear nearest bicubic).
Prints the best thread-CPU time of many runs (ms), the figure bench_sampling's "CPU" column
corresponds to; on an idle machine wall time is the same.
"""
import math
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
FORWARD_ONLY = "--forward" in sys.argv[1:]
MODES = [a for a in sys.argv[1:] if not a.startswith("--")] or ["bilinear", "nearest", "bicubic"]


def best_ms(fn, reps):
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t)
    return best * 1e3


def mild_theta(n, s=0.9):
    a = math.radians(10)
    t = torch.tensor([[s * math.cos(a), -s * math.sin(a), 0.05],
                      [s * math.sin(a), s * math.cos(a), -0.03]])
    return t.unsqueeze(0).repeat(n, 1, 1)


for shape in [(1, 64, 128, 128), (8, 3, 224, 224)]:
    x = torch.rand(shape)
    theta = mild_theta(shape[0])
    grid = F.affine_grid(theta, shape, align_corners=False)
    name = "x".join(map(str, shape))
    for mode in MODES:
        ms = best_ms(lambda: F.grid_sample(x, grid, mode=mode, align_corners=False),
                     30 if mode != "bicubic" else 8)
        print(f"grid_sample {mode:8s} {name}: {ms:.3f} ms")
        if mode == "bilinear":  # bench_sampling's zoom_out rows: scale 2.0
            zoom = F.affine_grid(mild_theta(shape[0], 2.0), shape, align_corners=False)
            ms = best_ms(lambda: F.grid_sample(x, zoom, mode=mode, align_corners=False), 30)
            print(f"grid_sample {mode:8s} {name} zoom_out: {ms:.3f} ms")
    if FORWARD_ONLY:
        continue
    print(f"affine_grid          {name}: "
          f"{best_ms(lambda: F.affine_grid(theta, shape, align_corners=False), 30):.3f} ms")
    xg = x.clone().requires_grad_(True)
    gg = grid.clone().requires_grad_(True)
    for mode in MODES:
        out = F.grid_sample(xg, gg, mode=mode, align_corners=False)
        go = torch.rand_like(out)
        ms = best_ms(lambda: torch.autograd.grad(out, (xg, gg), go, retain_graph=True), 8)
        print(f"grid_sample_backward {mode:8s} {name}: {ms:.3f} ms")
