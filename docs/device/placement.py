"""Does a generated backward's time depend on where its tensors lie in memory? (issue 29, stop 70)

Stop 69 and 70 saw one package's backward alone, at one tile, move by up to 1.6x between two timings of the same
launch (weight_tile.py's "auto" against the same tile forced). This times <op>_backward alone in TRIALS trials, each
with fresh tensors placed after a pad of a seeded random size (0-126 MiB, in 2 MiB steps), and a device copy of the
same bytes in the same trial, then prints each trial's time, the tensors' addresses modulo 64 MiB and the spread.
Every trial draws the same values (one seed), so what moves between trials is where the tensors lie. --kernels adds
each trial's time per kernel (torch.profiler, 20 calls), to tell which launch is sensitive.

    python docs/device/placement.py PACKAGE_DIR --op r05_tl --weights 2 --dtype bfloat16 --cols 65536 [--trials 12]
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package  # noqa: E402
from backward_kernels import kernel_times  # noqa: E402


def per_kernel(torch, fn, calls: int = 20) -> str:
    """Each CUDA kernel's mean time a call of fn (backward_kernels.kernel_times), the slowest first."""
    times = kernel_times(torch, fn, calls)
    return "; ".join(f"{name.split('(')[0][-40:]} {us:.0f} us" for name, us in sorted(times.items(), key=lambda kv: -kv[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--op", required=True)
    parser.add_argument("--weights", type=int, required=True)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--cols", type=int, default=65536)
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seed", type=int, default=70)
    parser.add_argument("--kernels", action="store_true")
    args = parser.parse_args()
    import torch
    from triton.testing import do_bench

    _, package, _ = import_package(args.package)
    module = importlib.import_module(f"{package.__name__}.ops.{args.op}")
    namespace, op_name = module._BACKWARD.split("::")
    op = getattr(getattr(torch.ops, namespace), op_name).default
    n_args = module.reference.__code__.co_argcount
    n_inputs = n_args - args.weights
    dtype = getattr(torch, args.dtype)
    shape = (args.size // args.cols, args.cols)
    rng = random.Random(args.seed)
    times, copies = [], []
    for trial in range(args.trials):
        torch.cuda.empty_cache()
        pad = torch.empty(rng.randrange(64) * 2**21, dtype=torch.uint8, device="cuda")
        torch.manual_seed(args.seed)
        xs = [torch.randn(shape, dtype=dtype, device="cuda") for _ in range(n_inputs)]
        xs += [torch.rand(args.cols, dtype=dtype, device="cuda") + 0.5 for _ in range(args.weights)]
        g = torch.randn(shape, dtype=dtype, device="cuda")
        grads = op(g, *xs, [True] * n_args)
        where = [t.data_ptr() % 2**26 // 2**20 for t in [g, *xs[:n_inputs], *grads[:n_inputs]]]
        del grads
        ms = do_bench(lambda: op(g, *xs, [True] * n_args), warmup=10, rep=60, return_mode="median")
        moved = (2 * n_inputs + 1) * args.size * g.element_size()
        src = torch.empty(moved // g.element_size() // 2, dtype=dtype, device="cuda")
        dst = torch.empty_like(src)
        copy = do_bench(lambda: dst.copy_(src), warmup=10, rep=60, return_mode="median")
        times.append(ms)
        copies.append(copy)
        print(f"trial {trial:2d} pad {pad.numel() // 2**20:3d} MiB: backward {ms:.3f} ms, copy {copy:.3f} ms "
              f"({copy / ms:.0%}); MiB mod 64 of g, inputs, grads: {where}", flush=True)
        if args.kernels:
            print("    " + per_kernel(torch, lambda: op(g, *xs, [True] * n_args)), flush=True)
        del pad, xs, g, src, dst
    print(f"{args.op} {args.dtype} {args.cols}: backward {min(times):.3f}-{max(times):.3f} ms "
          f"(max/min {max(times) / min(times):.2f}), copy {min(copies):.3f}-{max(copies):.3f} ms "
          f"(max/min {max(copies) / min(copies):.2f})")


if __name__ == "__main__":
    main()
