"""Float32 error of Winograd F(m x m, 3x3) for several interpolation point sets, against the
direct convolution in double (the simulation behind conv2d's choice of F(4x4, 3x3) points and
its error bound: docs/functional.md, docs/performance.md).

Run with /usr/bin/python3 (Debian python3-torch). Prints, per input scale and channel count, the
largest error of each algorithm and its worst ratio to the 1e-4 + 1e-4 |ref| bar, and the
bound's product max|x| * max_o |w_o|_2 * sqrt(C) with the error divided by it.
"""
import math

import numpy as np
import torch


def matrices(m, points):
    """A^T (m x n), G (n x 3), B^T (n x n) of F(m, 3) for n - 1 finite points and infinity."""
    r, n = 3, m + 2
    at, g = np.zeros((m, n)), np.zeros((n, r))
    for j, p in enumerate(points):
        at[:, j] = [p ** i for i in range(m)]
        den = np.prod([p - q for q in points if q != p])
        g[j] = [p ** k / den for k in range(r)]
    at[m - 1, n - 1] = 1
    g[n - 1, r - 1] = 1
    # B^T solves sum_j A^T[i, j] G[j, k] B^T[j, l] = [l == i + k] column by column.
    bt = np.zeros((n, n))
    rows = np.array([at[i] * g[:, k] for i in range(m) for k in range(r)])
    for col in range(n):
        rhs = np.array([1.0 if col == i + k else 0.0 for i in range(m) for k in range(r)])
        bt[:, col] = np.linalg.lstsq(rows, rhs, rcond=None)[0]
    return at, g, bt


def winograd(x, w, m, points):
    """conv2d(x, w, padding=1) by F(m x m, 3x3) with every step rounded to float32."""
    at, g, bt = (a.astype(np.float32) for a in matrices(m, points))
    n_img, c, h, wd = x.shape
    n = m + 2
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1 + m), (1, 1 + m)))
    th, tw = (h + m - 1) // m, (wd + m - 1) // m
    u = np.einsum("ak,ockl,bl->aboc", g, w, g).astype(np.float32)
    tiles = np.zeros((n_img, c, th, tw, n, n), np.float32)
    for a in range(th):
        for b in range(tw):
            tiles[:, :, a, b] = xp[:, :, a * m:a * m + n, b * m:b * m + n]
    v = np.einsum("ij,ncabjk,lk->ilncab", bt, tiles, bt).astype(np.float32)
    prod = np.einsum("iloc,ilncab->ilnoab", u, v).astype(np.float32)
    y = np.einsum("pi,ilnoab,ql->noabpq", at, prod, at).astype(np.float32)
    y = y.transpose(0, 1, 2, 4, 3, 5).reshape(n_img, -1, th * m, tw * m)
    return y[:, :, :h, :wd]


SETS = [(2, [0, 1, -1]), (4, [0, 1, -1, 2, -2]), (4, [0, 1, -1, 0.5, -0.5]),
        (4, [0, 1, -1, 0.5, -2])]


def main():
    torch.manual_seed(0)
    for scale in [1, 10, 40]:
        for c in [64, 256]:
            x = torch.randn(1, c, 28, 28) * scale
            w = torch.nn.Conv2d(c, 64, 3, padding=1).weight.detach()
            ref64 = torch.nn.functional.conv2d(x.double(), w.double(), None, padding=1).numpy()
            ref32 = torch.nn.functional.conv2d(x, w, None, padding=1).numpy()
            tol = 1e-4 + 1e-4 * np.abs(ref32)
            bound = (x.abs().max().item() * w.double().reshape(64, -1).norm(dim=1).max().item() *
                     math.sqrt(c))
            print("inputs x%d, %d channels: bound product %.1f, PyTorch float error %.2e" %
                  (scale, c, bound, np.abs(ref32 - ref64).max()))
            for m, points in SETS:
                y = winograd(x.numpy(), w.numpy(), m, points)
                err = np.abs(y - ref64).max()
                print("  F(%dx%d) at %-22s largest error %.2e (%.2e of the product), worst "
                      "ratio to the bar against PyTorch %.2f" %
                      (m, m, points, err, err / bound, (np.abs(y - ref32) / tol).max()))


if __name__ == "__main__":
    main()
