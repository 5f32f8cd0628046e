"""The GPU's own registers, spills and resident programs of a package's Triton weight-gradient kernels
(_<op>_weight_grad_kernel) at several tiles, through the package's _triton_rowwise.resident (the kernel compiled,
not launched), at the arguments the backward's launch passes for rows of --cols at --size elements.

    python docs/device/weight_counts.py PACKAGE_DIR [--tiles 64x64x4,16x64x4] [--cols 16384] [--ops r00_tl,...]

One line per op and dtype. It asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from pathlib import Path


def weight_kernels(package: Path, only: str = ""):
    """(op name, its module, its _<op>_weight_grad_kernel) for every op of the generated package at ``package`` that
    has one (``only``: a comma-separated list of ops to keep, or every op), the package imported from its root."""
    sys.path.insert(0, str(package))
    name = next(line.split(":", 1)[1].strip() for line in (package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    ops = importlib.import_module(f"{name}.ops")
    for info in pkgutil.iter_modules(ops.__path__):
        if only and info.name not in only.split(","):
            continue
        module = importlib.import_module(f"{name}.ops.{info.name}")
        kernel = getattr(module, f"_{info.name}_weight_grad_kernel", None)
        if kernel is not None:
            yield info.name, module, kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--tiles", default="64x64x4,16x64x4")
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--ops", default="")
    args = parser.parse_args()
    import torch
    import triton
    import triton.language as tl

    device = torch.device("cuda", torch.cuda.current_device())
    rows = args.size // args.cols
    for op, module, kernel in weight_kernels(args.package, args.ops):
        shared = importlib.import_module(module.__name__.rsplit(".", 2)[0] + "._triton_rowwise")
        names = [a for a in kernel.arg_names if a not in ("BLOCK_R", "BLOCK_C", "ACC")]
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
            cells = []
            for text in args.tiles.split(","):
                tile_rows, tile_cols, warps = (int(v) for v in text.split("x"))
                _, per_split = shared.splits(device, rows, triton.cdiv(args.cols, tile_cols), tile_rows)
                # the arguments by name, as the launch passes them: the per-row values and the weights' partial
                # sums in float32, every other tensor in the dtype, 1 for each flag, then the lengths
                given = {"rows": rows, "cols": args.cols, "rows_per_split": per_split}
                launch = [torch.float32 if a == "_stats_ptr" or re.fullmatch(r"_p\d+_ptr", a)
                          else dtype if a.endswith("_ptr") else 1 if re.fullmatch(r"_need\d+", a) else given[a]
                          for a in names]
                options = dict(BLOCK_R=tile_rows, BLOCK_C=tile_cols, ACC=tl.float32, num_warps=warps)
                held, spilled = shared.resident(kernel, launch, options, device)
                compiled = kernel.warmup(*launch, grid=(1,), **options)  # the build resident read, from the cache
                compiled._init_handles()
                cells.append(f"{text}: {compiled.n_regs} regs, {held} held, {spilled} B")
            print(f"{op} {str(dtype)[6:]:9s} {args.cols}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
