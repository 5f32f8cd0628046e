"""kernelgen: scaffold PyTorch custom CUDA operators from templates.

The library API is small: build an :class:`OpSpec` and pass it to :func:`generate`.

>>> from kernelgen import OpSpec, generate
>>> spec = OpSpec.create("fused-gelu", inputs="x", expr="x * sigmoid(1.702 * x)")
>>> generate(spec, "ops/")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import KernelgenError

if TYPE_CHECKING:
    from .render import generate
    from .spec import OpSpec

__all__ = ["KernelgenError", "OpSpec", "__version__", "generate"]


def __getattr__(name: str):
    # Lazy: importing copier costs ~0.3 s and the spec module ~0.07 s; `kernelgen --help` should not
    # pay them, and the command (kernelgen.__main__) holds Ctrl-C back only once this has run.
    if name == "generate":
        from .render import generate

        return generate
    if name == "OpSpec":
        from .spec import OpSpec

        return OpSpec
    raise AttributeError(name)
