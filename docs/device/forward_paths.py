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
forward's bytes (the inputs read, the output written). --compile-only calls each path once (fills Triton's cache
on disk; n processes side by side with --part). It asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--cols", default="16384")
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--part", default="0/1")
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    kinds, package, namespace = import_package(args.package)
    shared = importlib.import_module(f"{package.__name__}._triton_rowwise")
    cells = [(op, d, int(c)) for op in args.ops.split(",") for d in args.dtypes.split(",") for c in args.cols.split(",")]
    part, parts = (int(v) for v in args.part.split("/"))
    cells = cells[part::parts] if args.compile_only else cells
    seen: list[str] = []

    for name, dtype_name, cols in cells:
        module = importlib.import_module(f"{package.__name__}.ops.{name}")
        forward = getattr(getattr(torch.ops, namespace), name).default
        n_weights = kinds.get(name, ("rowwise", 0))[1]
        n_inputs = module.reference.__code__.co_argcount - n_weights
        dtype = getattr(torch, dtype_name)
        shape = (args.size // cols, cols)
        gen = torch.Generator("cuda").manual_seed(args.size)
        xs = [torch.empty(shape, dtype=dtype, device="cuda").uniform_(0.5, 2.5, generator=gen) for _ in range(n_inputs)]
        xs += [torch.empty(cols, dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen) for _ in range(n_weights)]
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
            for path in paths:
                try:
                    run(path)
                except Exception as error:  # a build that cannot compile (out of resources) is reported, not fatal
                    print(f"{name} {dtype_name} {cols} {path}: {type(error).__name__}: {str(error)[:120]}")
            torch.cuda.synchronize()
            print(f"compiled {name} {dtype_name} {cols}", flush=True)
            continue
        seen.clear()
        run("auto")
        auto_seen = "; ".join(dict.fromkeys(seen))
        moved = (n_inputs + 1) * args.size * dtype.itemsize
        src = torch.empty(moved // dtype.itemsize // 2, dtype=dtype, device="cuda")
        dst = torch.empty_like(src)
        copy = do_bench(lambda dst=dst, src=src: dst.copy_(src), warmup=10, rep=40, return_mode="median")
        figures = []
        for path in paths:
            try:
                ms = do_bench(lambda path=path: run(path), warmup=5, rep=40, return_mode="median")
                figures.append(f"{path} {1000 * ms:7.1f} us {100 * copy / ms:3.0f}%")
            except Exception as error:
                figures.append(f"{path} {type(error).__name__}")
        print(f"{name:8s} {dtype_name:9s} {cols:6d} | {' | '.join(figures)} | counts: {auto_seen}", flush=True)
        del xs, src, dst


if __name__ == "__main__":
    main()
