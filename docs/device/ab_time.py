"""Time the same ops in two builds, A and B, in one process (no torch.compile): the kernel change
between them, measured side by side.

    python docs/device/ab_time.py DIR_A DIR_B [--ops e10,e11] [--dtypes ...] [--sizes ...]

DIR_A and DIR_B are generated package roots built in place (python setup.py build_ext --inplace),
with different package names. Every op of A that B also has is timed (triton.testing.do_bench,
median, L2 flushed), A and B alternating; prints B's time over A's per case and the distribution.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import statistics
import sys
from pathlib import Path


def load(root: Path):
    name = next(p.parent.parent.name for p in root.glob("*/ops/__init__.py"))
    sys.path.insert(0, str(root))
    return name, importlib.import_module(name)


def timed(fn, xs) -> float:
    from triton.testing import do_bench

    return do_bench(lambda: fn(*xs), return_mode="median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="float32,float64,float16,bfloat16")
    parser.add_argument("--sizes", default=",".join(str(2**k) for k in (12, 16, 20, 24, 26, 28)))
    args = parser.parse_args()
    import torch

    name_a, mod_a = load(args.a)
    _, mod_b = load(args.b)
    ops = [op for op in (args.ops.split(",") if args.ops else sorted(
        p.stem for p in args.a.glob(f"{name_a}/ops/*.py") if p.stem != "__init__")) if hasattr(mod_b, op)]
    ratios: dict[str, list[float]] = {}
    print(f"A = {args.a}, B = {args.b}; B time / A time (below 1: B faster)")
    for op in ops:
        fa, fb = getattr(mod_a, op), getattr(mod_b, op)
        reference = importlib.import_module(f"{name_a}.ops.{op}").reference
        n_inputs = len(inspect.signature(reference).parameters)
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            line = []
            for n in (int(v) for v in args.sizes.split(",")):
                xs = [torch.randn(n, device="cuda", dtype=dtype) for _ in range(n_inputs)]
                differ = (fa(*xs).double() - fb(*xs).double()).abs().max().item()
                if differ:
                    print(f"  note: {op} {dtype_name} n={n}: A and B differ by up to {differ:.3g}")
                ta = min(timed(fa, xs), timed(fa, xs))
                tb = min(timed(fb, xs), timed(fb, xs))
                ratios.setdefault(f"{dtype_name} 2^{n.bit_length() - 1}", []).append(tb / ta)
                line.append(f"2^{n.bit_length() - 1} {ta * 1e3:.1f}/{tb * 1e3:.1f} us {tb / ta:.3f}")
                del xs
            print(f"{op} {dtype_name}: " + "; ".join(line), flush=True)
    print("B / A per dtype and size over the ops: min, median, max")
    for key, values in ratios.items():
        print(f"  {key}: {min(values):.3f} {statistics.median(values):.3f} {max(values):.3f}")


if __name__ == "__main__":
    main()
