"""Which kernels one call of a rowwise sweep op launches, and their times (torch.profiler), for one shape.

    python docs/device/r20_kernels.py PACKAGE_DIR --op r20 --rows 4096 --cols 16384 [--dtype bfloat16]

Used for stop 41's look at r20 at rows of 16384 (issue 28); under ncu, --once makes a single call.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import import_package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--op", default="r20")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--once", action="store_true")
    args = parser.parse_args()

    import torch

    _, module, _ = import_package(args.package)
    op_module = importlib.import_module(f"{module.__name__}.ops.{args.op}")
    call = getattr(op_module, args.op)
    count = call.__code__.co_argcount
    gen = torch.Generator(device="cuda").manual_seed(0)
    xs = [torch.randn(args.rows, args.cols, device="cuda", generator=gen).to(getattr(torch, args.dtype))
          for _ in range(count)]
    call(*xs)
    torch.cuda.synchronize()
    if args.once:
        return
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            call(*xs)
        torch.cuda.synchronize()
    for event in prof.key_averages():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            print(f"{event.count:3d} x {event.device_time / 1:9.1f} us  {event.key[:150]}")


if __name__ == "__main__":
    main()
