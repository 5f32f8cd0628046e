"""Issue 11: is matmul's 1024^3 float16 cell (0.68x of cuBLAS in stop 21's final run) a slow kernel or a
noisy measurement? Run from examples/matmul after it is built in place:

    python3 ../../docs/device/mm_repeat.py [--sizes 512,1024,2048] [--rounds 5]

For each dtype and size it alternates our op and torch.matmul (cuBLAS) for several rounds, each a
do_bench median with the L2 flushed (the benchmark's method), and then times the kernels alone with
the profiler (the GPU time of every kernel the call launches, mean of 50 back-to-back calls). It
prints one line per round and the kernels' names, so a slow kernel and a noisy timing can be told apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, os.getcwd())
import matmul


def kernel_time(fn, calls: int = 50):
    """Mean GPU time per call of the kernels fn launches (profiler), and their names."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total, names = 0.0, set()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total += event.device_time  # us
            names.add(event.name[:90])
    return total / calls, sorted(names)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="512,1024,2048")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for dtype in (torch.float16, torch.bfloat16):
        for n in (int(s) for s in args.sizes.split(",")):
            g = torch.Generator("cuda").manual_seed(n)
            a = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
            b = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
            ours = lambda a=a, b=b: matmul.matmul(a, b)  # noqa: E731
            cublas = lambda a=a, b=b: torch.matmul(a, b)  # noqa: E731
            ratios = []
            for r in range(args.rounds):
                t_ours = do_bench(ours, warmup=25, rep=100, return_mode="median")
                t_cublas = do_bench(cublas, warmup=25, rep=100, return_mode="median")
                ratios.append(t_cublas / t_ours)
                print(f"{str(dtype)[6:]:9s} {n}^3 round {r}: ours {t_ours * 1e3:7.2f} us  cuBLAS {t_cublas * 1e3:7.2f} us"
                      f"  ratio {t_cublas / t_ours:.3f}", flush=True)
            k_ours, names_ours = kernel_time(ours)
            k_cublas, names_cublas = kernel_time(cublas)
            print(f"{str(dtype)[6:]:9s} {n}^3 median ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f},"
                  f" max {max(ratios):.3f}); profiler kernel time ours {k_ours:.2f} us, cuBLAS {k_cublas:.2f} us,"
                  f" ratio {k_cublas / k_ours:.3f}")
            print(f"    ours: {names_ours}\n    cuBLAS: {names_cublas}", flush=True)


if __name__ == "__main__":
    main()
