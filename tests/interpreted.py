"""The first lines of a script that runs a generated Triton op's kernels in Triton's interpreter
(TRITON_INTERPRET=1: numpy on the CPU) in a subprocess of its own. The script takes the package's root and the
op's name as arguments, and after these lines has the op's module as ``mod`` and an instance of the op's
generated test class as ``suite`` (whose make_args and assert_matches the script then uses)."""

from __future__ import annotations

_PRELUDE = """
import importlib, importlib.util, sys
import torch, triton, triton.language as tl
root, op = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
mod = importlib.import_module(f"{PACKAGE}.ops.{op}")
spec = importlib.util.spec_from_file_location("generated_test", f"{root}/tests/test_{op}.py")
generated = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generated)
suite = next(value for name, value in vars(generated).items() if name.startswith("Test"))()
"""


def prelude(package: str) -> str:
    """The script's first lines, for the ops of ``package`` (its import name)."""
    return _PRELUDE.replace("{PACKAGE}", package)
