"""Registers and spills of a package's Triton weight-gradient kernels (_<op>_weight_grad_kernel) at several tiles,
on a machine without a GPU (triton.compile for sm_90, then ptxas -v, as triton_spills.py does).

    python docs/device/weight_tiles.py PACKAGE_DIR [--tiles 64x64x4,32x64x4,16x64x4] [--dtypes fp32,bf16]

One line per op and dtype: each tile (BLOCK_R x BLOCK_C x warps) with its registers and bytes spilled.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from triton_spills import ptxas
from weight_counts import weight_kernels


def counts(triton, tl, kernel, tile: tuple[int, int, int], dtype: str, cuda_home: str) -> str:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    rows, cols, warps = tile
    signature = {a: "constexpr" if a in ("BLOCK_R", "BLOCK_C", "ACC")
                 else "*fp32" if a == "_stats_ptr" or re.fullmatch(r"_p\d+_ptr", a)
                 else f"*{dtype}" if a.endswith("_ptr") else "i32" for a in kernel.arg_names}
    compiled = triton.compile(ASTSource(kernel, signature=signature,
                                        constexprs={"BLOCK_R": rows, "BLOCK_C": cols, "ACC": tl.float32}),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    return ptxas(compiled.asm["ptx"], cuda_home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--tiles", default="64x64x4,32x64x4,16x64x4,64x64x8")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--ops", default="")
    args = parser.parse_args()
    import triton
    import triton.language as tl

    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    tiles = [tuple(int(v) for v in text.split("x")) for text in args.tiles.split(",")]
    for op, _, kernel in weight_kernels(args.package, args.ops):
        for dtype in args.dtypes.split(","):
            cells = [f"{'x'.join(map(str, tile))}: {counts(triton, tl, kernel, tile, dtype, cuda_home)}" for tile in tiles]
            print(f"{op} {dtype}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
