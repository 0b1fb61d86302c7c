"""PyTorch baseline for bench_channel: timm's SEModule, EcaModule and CbamModule (the plain-torch
re-implementations in tests/fixtures/channel.py) on [8, 256, 28, 28], plus a tensor copy.

Run with one thread, as bench_channel's /1 entries:
    OMP_NUM_THREADS=1 /usr/bin/python3 bench/torch_channel.py [--threads T] [--runs R]
Prints wall-clock min / median and thread CPU-time min / median per module in milliseconds.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fixtures"))
from channel import CbamModule, EcaModule, SEModule  # noqa: E402


def measure(fn, runs):
    with torch.no_grad():
        for _ in range(10):
            fn()
        wall, cpu = [], []
        for _ in range(runs):
            w0, c0 = time.perf_counter(), time.thread_time()
            fn()
            cpu.append(time.thread_time() - c0)
            wall.append(time.perf_counter() - w0)
    wall.sort()
    cpu.sort()
    return wall[0] * 1e3, wall[runs // 2] * 1e3, cpu[0] * 1e3, cpu[runs // 2] * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x = torch.randn(8, 256, 28, 28)
    y = torch.empty_like(x)
    modules = [("copy", lambda: y.copy_(x))]
    for name, m in [("se", SEModule(256)), ("eca", EcaModule(256)), ("cbam", CbamModule(256))]:
        m.eval()
        modules.append((name, lambda m=m: m(x)))
    print("torch %s, %d thread(s), input %s" % (torch.__version__, args.threads,
                                                list(x.shape)))
    for name, fn in modules:
        print("%-5s wall min %7.3f median %7.3f | cpu min %7.3f median %7.3f ms"
              % ((name,) + measure(fn, args.runs)))


if __name__ == "__main__":
    main()
