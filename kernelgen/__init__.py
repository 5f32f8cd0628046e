"""kernelgen: scaffold PyTorch custom CUDA operators from templates.

The library API (:mod:`kernelgen.api`) does what the command line does: describe an op with
:class:`OpSpec`, then :func:`new` writes a package holding it, :func:`add` adds an op to a package,
:func:`update` brings a package up to date with the current templates (keeping your edits), and
:func:`load_package` reads what a package holds. Each returns a :class:`Result` (or
:class:`PackageInfo`) and raises a :class:`KernelgenError` subclass, with a one-line message, on
bad input; nothing is half-written. :func:`generate` writes a new package and returns its path.

>>> import kernelgen
>>> spec = kernelgen.OpSpec.create("fused-gelu", inputs="x", expr="x * sigmoid(1.702 * x)")
>>> result = kernelgen.new(spec, "ops/")  # doctest: +SKIP
>>> kernelgen.add("silu", result.path, inputs="x", expr="x * sigmoid(x)")  # doctest: +SKIP
>>> kernelgen.update(result.path).conflicts  # doctest: +SKIP
()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    AnswersError,
    ConflictError,
    DestinationError,
    ExprError,
    InvalidNameError,
    KernelgenError,
    RenderError,
    SpecError,
)

if TYPE_CHECKING:
    from .api import Change, PackageInfo, Result, add, load_package, new, read_answers, rebuild_record, update
    from .render import generate
    from .spec import OpSpec, PackageSpec

__all__ = [
    "AnswersError", "Change", "ConflictError", "DestinationError", "ExprError", "InvalidNameError",
    "KernelgenError", "OpSpec", "PackageInfo", "PackageSpec", "RenderError", "Result", "SpecError",
    "__version__", "add", "generate", "load_package", "new", "read_answers", "rebuild_record", "update",
]

#: Where each lazily imported name lives. Lazy: importing copier costs ~0.3 s and the spec module
#: ~0.07 s; `kernelgen --help` should not pay them, and the command (kernelgen.__main__) holds Ctrl-C
#: back only once this has run.
_LAZY = {
    "generate": "render", "OpSpec": "spec", "PackageSpec": "spec",
    **dict.fromkeys(("Change", "PackageInfo", "Result", "add", "load_package", "new", "read_answers",
                     "rebuild_record", "update"), "api"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f".{module}", __name__), name)
