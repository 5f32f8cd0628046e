"""The spread of the Triton rowwise backward's time across processes (issue 29): the backward alone of one op, one
dtype and row length, timed --repeats times in this process (do_bench medians), with the programs the launch chose.

    python docs/device/triton_weight_spread.py SWEEP/rsweep-ops --op layernorm_tl --weights 2 [--dtype bfloat16] [--cols 1024]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--op", required=True)
    parser.add_argument("--weights", type=int, required=True)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch
    from triton.testing import do_bench

    sys.path.insert(0, str(args.package))
    name = next(line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    module = importlib.import_module(f"{name}.ops.{args.op}")
    shared = importlib.import_module(f"{name}._triton_rowwise")
    namespace, op_name = module._BACKWARD.split("::")
    op = getattr(getattr(torch.ops, namespace), op_name).default
    n_args = module.reference.__code__.co_argcount
    dtype = getattr(torch, args.dtype)
    shape = (args.size // args.cols, args.cols)
    xs = [torch.randn(shape, dtype=dtype, device="cuda") for _ in range(n_args - args.weights)]
    xs += [torch.rand(args.cols, dtype=dtype, device="cuda") + 0.5 for _ in range(args.weights)]
    g = torch.randn(shape, dtype=dtype, device="cuda")
    times = [do_bench(lambda: op(g, *xs, [True] * n_args), warmup=25, rep=100, return_mode="median") * 1e3
             for _ in range(args.repeats)]
    held = [f"{v[0]} programs, {v[1]} B spilled" for v in shared._HELD.values()]
    print(f"{args.op} {args.dtype} {args.cols}: " + " ".join(f"{t:.1f}" for t in times) + f" us; {held}", flush=True)


if __name__ == "__main__":
    main()
