"""Every launch path of a generated Triton rowwise backward, run by Triton's interpreter on a machine without a GPU.

    python docs/device/interpret_backward.py PACKAGE_DIR [--ops r00_tl,r01_tl] [--cols 1000] [--rows 5]

For each op of the package with a generated backward, the registered backward's own launch
(_<op>_backward_launch, the kernels called directly) runs under TRITON_INTERPRET=1 on CPU tensors, once for each
path the launch can take. The path is forced through the answers the launch reads: _triton_rowwise.resident (the
programs the GPU holds of a compiled kernel and the bytes it spills) answers as the path needs, on a GPU of four SMs.
The paths:
  rows          the rows kernel (ops with weights), its next row in registers (its build spills nothing)
  rows-staged   the rows kernel at STAGES=2, its next row in shared memory (its build spills, one program an SM)
  rows-staged-only  the rows kernel's unstaged build spills past every tolerance and its staged build nothing: a
                launch that tries the staged build on its own takes it, others the kernel of one program a row
  one           the kernel of one program a row (the rows kernel spills too much), then the weights' kernel
  one-staged    the same, looping over its rows at STAGES=2 (one program an SM)
  long          the long kernel's passes and the weights' kernel (rows longer than _MAX_BACKWARD_BLOCK)
  long-known    the same, with the per-row values the forward saved (the eager training path: _<op>_launch with
                save, then the backward with known); its forward holds the row in registers where it fits
  long-known-fwd  the same at rows longer than _MAX_BLOCK, saved by the forward's long kernel
Each path's gradients (float32, every argument flagged) are checked with the generated test's own
assert_gradients_match, against the exact gradients of reference(). The interpreter computes in numpy: this checks
the kernels' logic and the launch's arguments on expressions nobody tuned for, not their speed nor their bits on a
GPU. A path whose answers the launch does not ask for (rows and rows-staged for an op without weights) is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

PATHS = ("rows", "rows-staged", "rows-staged-only", "one", "one-staged", "long", "long-known", "long-known-fwd")


def fake_resident(path: str):
    """A resident() that answers (programs held, bytes spilled) so that the launch takes ``path``."""

    def resident(kernel, args, options, device):
        name = kernel.__name__
        staged = options.get("STAGES", 1) > 1
        if name.endswith("_weight_grad_kernel"):
            return 16, 0
        if name.endswith("_rows_kernel"):
            if path == "rows":
                return 2, 0
            if path == "rows-staged":
                return 2, 8  # spills a little unstaged (and staged): one program an SM, so it runs staged
            if path == "rows-staged-only":
                return (2, 0) if staged else (2, 100_000)
            return 2, 100_000  # past every tolerance: the kernel of one program a row takes the rows
        if name.endswith("_backward_kernel"):
            if path == "one-staged":
                return 2, 0
            if path.startswith("long"):
                return 2, 100_000
            return 100, 0
        return 100, 0

    return resident


def interpretable_libdevice() -> None:
    """libdevice's functions as the interpreter can run them. Outside a compiled kernel they are empty stubs (the
    compiler binds them to the device library), so each one the generated kernels call is replaced by numpy's: the
    _rn operations are numpy's (already correctly rounded, never contracted), the others numpy's float routines."""
    import numpy as np
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.runtime.interpreter import TensorHandle

    def wrap(np_fn):
        def call(*args):
            datas = [arg.handle.data for arg in args]
            out = np_fn(*datas).astype(datas[0].dtype)
            like = next(arg for arg, data in zip(args, datas, strict=True) if data.shape == out.shape)
            return tl.core.tensor(TensorHandle(out, like.handle.dtype), like.type)
        return call

    for name, np_fn in {"add_rn": np.add, "sub_rn": np.subtract, "mul_rn": np.multiply, "sqrt_rn": np.sqrt,
                        "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "pow": np.power}.items():
        setattr(libdevice, name, wrap(np_fn))


def load_suite(root: Path, op: str):
    spec = importlib.util.spec_from_file_location(f"generated_test_{op}", root / "tests" / f"test_{op}.py")
    assert spec is not None and spec.loader is not None
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    return next(value for name, value in vars(generated).items() if name.startswith("Test"))()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--cols", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=5)
    args = parser.parse_args(argv)

    import torch

    root = args.package.resolve()
    sys.path.insert(0, str(root))
    package = next(p.parent.name for p in root.glob("*/_triton_rowwise.py"))
    shared = importlib.import_module(f"{package}._triton_rowwise")
    ops = args.ops.split(",") if args.ops else sorted(p.stem for p in (root / package / "ops").glob("*.py")
                                                      if p.stem != "__init__")
    interpretable_libdevice()
    shared._sm_count = lambda device: 4
    torch.cuda.device = lambda device: contextlib.nullcontext()
    torch.cuda.current_device = lambda: 0
    failures = 0
    for op in ops:
        mod = importlib.import_module(f"{package}.ops.{op}")
        launch = getattr(mod, f"_{op}_backward_launch", None)
        if launch is None:
            continue
        suite = load_suite(root, op)
        weights = hasattr(mod, f"_{op}_backward_rows_kernel")
        verdicts = []
        for path in PATHS:
            if path.startswith("rows") and not weights:
                continue
            known = path.startswith("long-known")
            if known and "save" not in inspect.signature(getattr(mod, f"_{op}_launch")).parameters:
                continue  # the forward saves nothing the backward reads
            cols = (mod._MAX_BLOCK + 3 if path == "long-known-fwd" else mod._MAX_BACKWARD_BLOCK + 3 if path.startswith("long")
                    else args.cols)
            shared.resident = fake_resident(path)
            for cache in ("_HELD", "_PIPELINED", "_STAGED", "_ANSWERS"):
                getattr(shared, cache, {}).clear()
            xs, grad = suite.backward_args((args.rows, cols), torch.float32, "cpu", seed=cols)
            try:
                if known:
                    _, stats = getattr(mod, f"_{op}_launch")(*xs, getattr(mod, f"_{op}_kernel"), getattr(mod, f"_{op}_long_kernel"),
                                                              save=True)
                    grads = launch(grad, *xs, [True] * len(xs), lambda kernel: kernel, known=stats)
                else:
                    grads = launch(grad, *xs, [True] * len(xs), lambda kernel: kernel)
                suite.assert_gradients_match(grads, grad, xs)
                verdicts.append(f"{path} ok")
            except Exception as error:  # each path's failure is reported, the others still run
                failures += 1
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
                verdicts.append(f"{path} FAILED ({type(error).__name__}: {reason})")
                if os.environ.get("VERBOSE"):
                    traceback.print_exc()
        print(f"{op:12s} " + "; ".join(verdicts), flush=True)
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
