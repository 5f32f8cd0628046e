"""Each kernel the Triton rowwise forward could take at the longest rows it holds in registers, forced in turn and
timed, with the compiled kernel's registers and spills as this GPU's Triton reports them: the data for a spill
tolerance in _triton_rowwise.rows_warps (it sends a 2-byte row of 16384 to the long kernel on any spill at both
16 and 32 warps; the backward's backward_fit tolerates 64 bytes a thread).

    python docs/device/forward_paths.py PACKAGE_DIR --ops r00_tl,r01_tl [--dtypes bfloat16] [--cols 16384]
                                        [--size 67108864] [--compile-only --part i/n]

Paths, each by patching the op module's _rows_warps for its calls:
  auto     what the launch takes by itself (the counts at 16 and 32 warps are printed: programs held, bytes spilled
           a thread; none where the launch does not ask, as for float32, which takes 32 warps at 16384)
  reg@16   the kernel holding the row in registers at 16 warps
  reg@32   the same at 32 warps
  long     the long kernel's passes (_rows_warps answers None)
Each timed with triton.testing.do_bench (median, the op's forward alone through torch.ops) against a copy of the
forward's bytes (the inputs read, the output written; --graphs: replayed from a CUDA graph, the host's time left
out). --compile-only calls each path once (fills Triton's cache on disk; n processes side by side with --part).
It asserts nothing.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package
from paths_common import cells, compile_paths, op_arguments, parser, time_paths


def main(argv: list[str] | None = None) -> None:
    args = parser(__doc__, "bfloat16", "16384").parse_args(argv)

    import torch
    from triton.testing import do_bench

    kinds, package, namespace = import_package(args.package)
    shared = importlib.import_module(f"{package.__name__}._triton_rowwise")
    seen: list[str] = []

    for name, dtype_name, cols in cells(args):
        module = importlib.import_module(f"{package.__name__}.ops.{name}")
        forward = getattr(getattr(torch.ops, namespace), name).default
        n_weights = kinds.get(name, ("rowwise", 0))[1]
        dtype = getattr(torch, dtype_name)
        xs, n_inputs = op_arguments(torch, module, n_weights, dtype, args.size, cols)
        original = module._rows_warps

        def counting(kernel, kargs, options, device, wider, original=original):
            for warps in (options["num_warps"], wider):
                held, spills = shared.resident(kernel, kargs, {**options, "num_warps": warps}, device)
                seen.append(f"@{warps}w: {held} held, {spills} B")
            return original(kernel, kargs, options, device, wider)

        def run(path: str, xs=xs, forward=forward, module=module, original=original, counting=counting):
            if path == "auto":
                module._rows_warps = counting
            elif path.startswith("reg@"):
                module._rows_warps = lambda *a, w=int(path[4:]), **kw: w
            elif path == "long":
                module._rows_warps = lambda *a, **kw: None
            try:
                return forward(*xs)
            finally:
                module._rows_warps = original

        paths = ["auto", "reg@16", "reg@32", "long"]
        if args.compile_only:
            compile_paths(torch, run, paths, f"{name} {dtype_name} {cols}")
            continue
        seen.clear()
        run("auto")
        auto_seen = "; ".join(dict.fromkeys(seen))
        figures = time_paths(torch, do_bench, run, paths, (n_inputs + 1) * args.size * dtype.itemsize, dtype, args.graphs)
        print(f"{name:8s} {dtype_name:9s} {cols:6d} | {figures} | counts: {auto_seen}", flush=True)
        del xs


if __name__ == "__main__":
    main()
