"""PyTorch reference timing for bench_sk.cpp: timm's SelectiveKernel (plain-torch copy from
tests/fixtures/sk.py) on [1, 64, 56, 56], two paths, 64 channels, defaults, eval mode.

OMP_NUM_THREADS=1 /usr/bin/python3 bench/bench_sk.py [threads] [runs]
Prints the median and minimum of many timed runs in milliseconds, wall and process CPU time.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fixtures"))
from sk import SelectiveKernel, randomize_batch_norms  # noqa: E402


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    sk = SelectiveKernel(64)
    randomize_batch_norms(sk, gen)
    x = torch.rand(1, 64, 56, 56, generator=gen)
    wall, cpu = [], []
    with torch.no_grad():
        for _ in range(20):
            sk(x)
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            sk(x)
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    wall.sort()
    cpu.sort()
    # On a shared machine the process CPU time is the steadier figure (for one thread it is the
    # time the block computed); Google Benchmark's "CPU" column is the same quantity.
    print(f"torch {torch.__version__} threads={threads} SelectiveKernel [1,64,56,56]: "
          f"wall median {wall[runs // 2]:.3f} ms min {wall[0]:.3f} ms; "
          f"cpu median {cpu[runs // 2]:.3f} ms min {cpu[0]:.3f} ms")


if __name__ == "__main__":
    main()
