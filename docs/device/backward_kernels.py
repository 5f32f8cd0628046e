"""Where the backward of generated rowwise ops spends its time, kernel by kernel, beside torch.compile's
forward+backward of the same reference (stop 65's question: why the Triton backward at rows of 4096 and 16384
reaches 3-37% of a copy).

    python docs/device/backward_kernels.py PACKAGE_DIR [--ops r00_tl,r03_tl] [--dtypes bfloat16,float32]
                                          [--size 67108864] [--cols 1024,4096,16384] [--steps 20]

For each op, dtype and row length (rows of --size / cols elements, inputs and weights as backward_bench.py
makes them) it profiles --steps calls of <op>_backward alone and --steps forward+backward steps of
torch.compile(reference), and prints each kernel's time per call, the sum, and a device-to-device copy of the
backward's bytes (grad and the inputs read, the inputs' gradients written). It asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package


def kernel_times(torch, fn, steps: int) -> dict[str, float]:
    """Each CUDA kernel's time (us) per call of fn, under torch.profiler, after a warm-up."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    times: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] += event.device_time / steps
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--cols", default="1024,4096,16384")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    torch._dynamo.config.recompile_limit = 64
    kinds, package, namespace = import_package(args.package)
    names = [n for n in args.ops.split(",") if n] or sorted(
        p.stem for p in (Path(package.__file__).parent / "ops").glob("*.py") if p.stem != "__init__")
    for name in names:
        module = importlib.import_module(f"{package.__name__}.ops.{name}")
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        n_args = module.reference.__code__.co_argcount
        n_weights = kinds.get(name, ("rowwise", 0))[1]
        n_inputs = n_args - n_weights
        compiled = torch.compile(module.reference, dynamic=False)
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for cols in map(int, args.cols.split(",")):
                shape = (args.size // cols, cols)
                gen = torch.Generator("cuda").manual_seed(args.size)
                xs = [torch.empty(shape, dtype=dtype, device="cuda").uniform_(0.5, 2.5, generator=gen) for _ in range(n_inputs)]
                xs += [torch.empty(cols, dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen) for _ in range(n_weights)]
                g = torch.empty(shape, dtype=dtype, device="cuda").normal_(generator=gen)
                leaves = [x.clone().requires_grad_() for x in xs]

                def compiled_step(leaves=leaves, g=g, compiled=compiled):
                    for leaf in leaves:
                        leaf.grad = None
                    compiled(*leaves).backward(g)

                ours = kernel_times(torch, lambda g=g, xs=xs, backward=backward, n=n_args: backward(g, *xs, [True] * n), args.steps)
                theirs = kernel_times(torch, compiled_step, args.steps)
                moved = (2 * n_inputs + 1) * args.size * dtype.itemsize
                src = torch.empty(moved // dtype.itemsize // 2, dtype=dtype, device="cuda")
                dst = torch.empty_like(src)
                copy_us = 1000 * do_bench(lambda dst=dst, src=src: dst.copy_(src), warmup=10, rep=40, return_mode="median")
                print(f"== {name} {dtype_name} {shape[0]}x{cols}: ours backward {sum(ours.values()):.1f} us, "
                      f"compile fwd+bwd {sum(theirs.values()):.1f} us, copy of the backward's bytes {copy_us:.1f} us",
                      flush=True)
                for label, times in (("ours", ours), ("compile", theirs)):
                    for kernel, us in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
                        print(f"   {label:7s} {us:8.1f} us  {kernel[:120]}")
                del xs, g, leaves, src, dst


if __name__ == "__main__":
    main()
