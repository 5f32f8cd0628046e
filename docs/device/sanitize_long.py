"""The forward long-row kernels of a package's rowwise ops, for compute-sanitizer (issue 28's memcheck and
racecheck evidence over the long-row kernels).

    compute-sanitizer --tool memcheck python docs/device/sanitize_long.py PACKAGE_DIR --ops a,b

Each op is called through its generated test suite's own arguments (make_args) on rows that take the long
kernel: 65536, 65537, 262147 and 70001 elements, in float32 and bfloat16, with a transposed view among them.
It checks nothing itself: the sanitizer reports, and the exit status says whether any call raised.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

SHAPES = [(3, 65536), (2, 65537), (1, 262147), (4, 70001)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    args = parser.parse_args(argv)

    import torch

    sys.path.insert(0, str(args.package))
    calls = 0
    for op in args.ops.split(","):
        spec = importlib.util.spec_from_file_location(f"test_{op}", args.package / "tests" / f"test_{op}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        suite = next(value for name, value in vars(module).items() if name.startswith("Test"))()
        for dtype in (torch.float32, torch.bfloat16):
            for shape in SHAPES:
                tensors = suite.make_args(shape, dtype, "cuda", seed=calls)
                suite.op.call(*tensors)
                calls += 1
            tensors = suite.make_args((3, 65540), dtype, "cuda", seed=calls)
            n = len(suite.op.inputs)
            suite.op.call(*[t.t().contiguous().t() for t in tensors[:n]], *tensors[n:])  # column-major views
            calls += 1
    torch.cuda.synchronize()
    print(f"{calls} calls, {args.ops}")


if __name__ == "__main__":
    main()
