"""kernelgen: scaffold PyTorch custom CUDA operators from templates.

The library API is small: build an :class:`OpSpec` and pass it to :func:`generate`.

>>> from kernelgen import OpSpec, generate
>>> spec = OpSpec.create("fused-gelu", inputs="x", expr="x * sigmoid(1.702 * x)")
>>> generate(spec, "ops/")  # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import KernelgenError
from .spec import OpSpec

__all__ = ["KernelgenError", "OpSpec", "__version__", "generate"]


def __getattr__(name: str):  # lazy: importing copier costs ~0.3 s, the CLI's --help should not pay it
    if name == "generate":
        from .render import generate

        return generate
    raise AttributeError(name)
