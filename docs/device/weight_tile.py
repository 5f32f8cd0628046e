"""The Triton rowwise backward's weight-gradient tile (issue 29): times <op>_backward alone for each
(rows, columns, warps) tile of --tiles, forced on the op's module (its _weight_tile answers it; before template
version 52, _WEIGHT_TILE was set), against a copy of the bytes
the backward must move, in one process.

    python docs/device/weight_tile.py PACKAGE_DIR --op layernorm_tl [--tiles auto,16x128x4,32x128x8] [--cols 1024,16384]

A tile "auto" leaves the package's own choice (_triton_rowwise.weight_tile, template version 52 on).

Each tile's backward is timed replayed from a CUDA graph (triton.testing.do_bench_cudagraph): a call of the registered
op takes the host 0.2-0.5 ms on the H200 machines (host_overhead.py, stop 70), longer than many backwards take the
GPU, and do_bench's figures then time the host. Each tile's gradients are checked against the first tile's: the
largest difference, relative to the largest gradient, is printed beside its time.
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
    parser.add_argument("--weights", type=int, default=2)
    parser.add_argument("--tiles", default="16x128x4,32x128x4,32x128x8,64x64x4,64x128x8,8x256x4")
    parser.add_argument("--cols", default="1024,4096,16384")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--size", type=int, default=2**26)
    args = parser.parse_args()
    import torch
    from triton.testing import do_bench_cudagraph

    sys.path.insert(0, str(args.package))
    name = next(line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    module = importlib.import_module(f"{name}.ops.{args.op}")
    backward = module._BACKWARD.split("::")
    op = getattr(getattr(torch.ops, backward[0]), backward[1]).default
    n_args = module.reference.__code__.co_argcount
    chosen = getattr(module, "_weight_tile", None)  # version 52 on: the launch's rule (tile "auto")
    n_inputs = n_args - args.weights
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        for cols in map(int, args.cols.split(",")):
            shape = (args.size // cols, cols)
            xs = [torch.randn(shape, dtype=dtype, device="cuda") for _ in range(n_inputs)]
            xs += [torch.rand(cols, dtype=dtype, device="cuda") + 0.5 for _ in range(args.weights)]
            g = torch.randn(shape, dtype=dtype, device="cuda")
            moved = (2 * n_inputs + 1) * args.size * g.element_size()
            src = torch.empty(moved // g.element_size() // 2, dtype=dtype, device="cuda")
            dst = torch.empty_like(src)
            copy = do_bench_cudagraph(lambda dst=dst, src=src: dst.copy_(src), rep=60, return_mode="median")
            line = []
            first = None
            for tile in args.tiles.split(","):
                if tile == "auto":  # the package's own choice
                    module._weight_tile = chosen
                else:
                    forced = tuple(int(v) for v in tile.split("x"))
                    module._WEIGHT_TILE = forced
                    module._weight_tile = lambda *args, forced=forced: forced
                grads = op(g, *xs, [True] * n_args)
                first = first or grads
                apart = max(float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
                            for a, b in zip(grads, first))
                ms = do_bench_cudagraph(lambda g=g, xs=xs: op(g, *xs, [True] * n_args), rep=60, return_mode="median")
                line.append(f"{tile} {ms:.3f} ms ({copy / ms:.0%}, {apart:.0e})")
            print(f"{args.op} {str(dtype)[6:]:9s} {cols:6d}: " + "; ".join(line), flush=True)


if __name__ == "__main__":
    main()
