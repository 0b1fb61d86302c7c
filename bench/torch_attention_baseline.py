"""PyTorch 1.13 baselines for bench_attention (same shapes), one thread.

Run: OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_attention_baseline.py [SUBSTRING...]
Prints one line per case: name, median and min CPU milliseconds. With arguments, only the cases
whose name contains one of them run (bench/compare_attention.py uses this).
"""
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)


def bench(name, fn, runs=30, warmup=3):
    if len(sys.argv) > 1 and not any(a in name for a in sys.argv[1:]):
        return
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append((time.process_time() - t) * 1e3)
    print("%-28s median %8.3f ms   min %8.3f ms" % (name, statistics.median(times), min(times)))


def main():
    q, k, v = (torch.randn(8, 8, 196, 32) for _ in range(3))
    scale = 32 ** -0.5
    bench("sdpa [8,8,196,32]",
          lambda: torch.softmax(q @ k.transpose(-2, -1) * scale, -1) @ v, runs=60)

    # Packed heads as nn.MultiheadAttention splits them: [8,196,256] -> 8 heads of 32.
    qp, kp, vp = (torch.randn(8, 196, 256) for _ in range(3))

    def heads():
        qh = qp.view(8, 196, 8, 32).transpose(1, 2)
        kh = kp.view(8, 196, 8, 32).transpose(1, 2)
        vh = vp.view(8, 196, 8, 32).transpose(1, 2)
        o = torch.softmax(qh @ kh.transpose(-2, -1) * scale, -1) @ vh
        return o.transpose(1, 2).reshape(8, 196, 256)
    bench("sdpa heads [8,196,256]/8", heads, runs=60)

    # nn.MultiheadAttention(256, 8, batch_first=True), eval, self-attention; need_weights=True
    # (the default: head-averaged weights) and False (may take the fused fast path).
    mha = torch.nn.MultiheadAttention(256, 8, batch_first=True).eval()
    xm = torch.randn(8, 196, 256)
    with torch.no_grad():
        bench("mha [8,196,256] h8 weights", lambda: mha(xm, xm, xm), runs=30)
        bench("mha [8,196,256] h8 no weights",
              lambda: mha(xm, xm, xm, need_weights=False), runs=30)

    # timm NonLocalAttn(64) on [2,64,28,28] (the block as tests/fixtures/non_local.py writes it).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "fixtures"))
    from non_local import NonLocalAttn
    nl = NonLocalAttn(64).eval()
    xn = torch.randn(2, 64, 28, 28)
    with torch.no_grad():
        bench("nonlocal [2,64,28,28]", lambda: nl(xn), runs=30)

    # Local attention, 7x7 window, via unfold (the fixture's reference formulation).
    ql, kl, vl = (torch.randn(1, 64, 56, 56) for _ in range(3))
    ones = torch.ones(1, 1, 56, 56)

    def local():
        D, side = 3, 7
        ku = F.unfold(kl, side, padding=D).view(1, 64, 49, 56, 56)
        vu = F.unfold(vl, side, padding=D).view(1, 64, 49, 56, 56)
        valid = F.unfold(ones, side, padding=D).view(1, 49, 56, 56) > 0
        s = ((ql[:, :, None] * ku).sum(1) / 8.0).masked_fill(~valid, float("-inf"))
        w = torch.softmax(s, dim=1)
        return (w[:, None] * vu).sum(2)
    bench("local [1,64,56,56] D=3", local, runs=10)

    # Exact top-32 key selection and dense attention at 4096 x 4096 x 64.
    qs, ks, vs = torch.randn(1, 4096, 64), torch.randn(1, 4096, 64), torch.randn(1, 4096, 64)
    bench("topk select 4096^2x64 k32", lambda: (qs @ ks.transpose(1, 2)).topk(32, dim=-1), runs=8)
    bench("dense sdpa 4096^2x64",
          lambda: torch.softmax(qs @ ks.transpose(1, 2) * 0.125, -1) @ vs, runs=8)

    def attend_selected():
        vals, idx = (qs @ ks.transpose(1, 2)).topk(32, dim=-1)
        w = torch.softmax(vals * 0.125, -1)
        g = vs[0][idx[0]]                        # [4096, 32, 64]
        return (w[0, :, :, None] * g).sum(1)
    bench("topk attention 4096 k32", attend_selected, runs=8)

    # Score functions on [8,196,64].
    a, b, c = (torch.randn(8, 196, 64) for _ in range(3))
    W = torch.randn(64, 64)
    Wq, Uk, va = torch.randn(32, 64), torch.randn(32, 64), torch.randn(32)
    bench("attend dot softmax", lambda: torch.softmax(a @ b.transpose(1, 2), -1) @ c)
    bench("attend general softmax", lambda: torch.softmax(a @ W @ b.transpose(1, 2), -1) @ c)
    bench("attend additive softmax", lambda: torch.softmax(
        torch.tanh((a @ Wq.t())[:, :, None] + (b @ Uk.t())[:, None]) @ va, -1) @ c, runs=5)
    bench("attend cosine softmax", lambda: torch.softmax(
        F.cosine_similarity(a[:, :, None], b[:, None], dim=-1), -1) @ c, runs=5)

    # DETR sine encoding [2,256,32,32].
    def sine():
        mask = torch.zeros(2, 32, 32, dtype=torch.bool)
        not_mask = ~mask
        y = not_mask.cumsum(1, dtype=torch.float32)
        x = not_mask.cumsum(2, dtype=torch.float32)
        y = y / (y[:, -1:, :] + 1e-6) * 2 * math.pi
        x = x / (x[:, :, -1:] + 1e-6) * 2 * math.pi
        dim_t = torch.arange(128, dtype=torch.float32)
        dim_t = 10000 ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / 128)
        px = x[:, :, :, None] / dim_t
        py = y[:, :, :, None] / dim_t
        px = torch.stack((px[:, :, :, 0::2].sin(), px[:, :, :, 1::2].cos()), dim=4).flatten(3)
        py = torch.stack((py[:, :, :, 0::2].sin(), py[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((py, px), dim=3).permute(0, 3, 1, 2).contiguous()
    bench("position_encoding_sine", sine)

    table = torch.randn(169, 8)
    coords = torch.stack(torch.meshgrid(torch.arange(7), torch.arange(7), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += 6
    rel[:, :, 1] += 6
    rel[:, :, 0] *= 13
    index = rel.sum(-1)
    bench("relative_position_bias 7x7",
          lambda: table[index.view(-1)].view(49, 49, -1).permute(2, 0, 1).contiguous(), runs=200)

    x = torch.randn(8, 256, 14, 14)
    bench("flatten+unflatten", lambda: x.flatten(2).transpose(1, 2).contiguous()
          .transpose(1, 2).reshape(8, 256, 14, 14).contiguous(), runs=100)


if __name__ == "__main__":
    main()
