"""What every kind's suite shares: the description of the op under test, and the devices and dtypes
its tests run on."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from typing import Any, Callable

import pytest
import torch

from .. import WITH_CUDA
from .error_model import ErrorModel, Mismatches

__all__ = ["ErrorModel", "Mismatches", "OpUnderTest", "Suite", "assert_as_close_as_eager", "requires_cuda", "seeded"]

#: Added to every seed the suites draw arguments with: KERNELGEN_TEST_SEED=1 pytest draws other values
#: (the same tests on other inputs; a few runs with different seeds see what one may miss).
SEED_OFFSET = int(os.environ.get("KERNELGEN_TEST_SEED", "0"))


def seeded(seed, device="cpu"):
    """A random generator on device, seeded with seed + SEED_OFFSET."""
    return torch.Generator(device).manual_seed(seed + SEED_OFFSET)


def assert_as_close_as_eager(got, eager, exact, rtol, atol):
    """torch.compile's result ``got`` against eager's, both held to the exact one (float64, on the same
    inputs): got may be off by rtol and atol plus twice the largest error eager makes anywhere in the tensor.
    Compile evaluates what eager does, but may fuse and reorder its floating-point steps (the vjp of
    reference() in op-math, where an op's backward is that stub). Where the expression is ill-conditioned,
    both drift from the exact result by more than any fixed tolerance, each its own way: on an H100, a float32
    op with rsqrt(abs(sum(cos(...)))) had compiled and eager gradients 4.5e-4 apart. A compiled graph that
    drops or changes a step is off by as much as the values themselves, far past eager's error, and fails."""
    exact = exact.detach().double()
    eager_error = (eager.detach().double() - exact).abs()
    finite = eager_error[torch.isfinite(eager_error)]
    slack = float(finite.max()) if finite.numel() else 0.0
    torch.testing.assert_close(got.detach().double(), exact, rtol=rtol, atol=atol + 2 * slack, equal_nan=True)


def without_compile_caches():
    """A context in which torch.compile compiles afresh, without its on-disk caches: a graph compiled
    earlier for another op of the same name (another build of this package, whose backward was the vjp
    of reference(), say) is not reused for this one."""
    return torch._inductor.config.patch(force_disable_caches=True)


@dataclasses.dataclass(frozen=True)
class OpUnderTest:
    """One op, as its test file describes it to the suite of its kind."""

    #: The op's name (its messages start with it).
    name: str
    #: "cuda" (the C++ extension) or "triton".
    backend: str
    #: The public function (``rmsnorm.<op>``) and the registered op (``torch.ops.rmsnorm.<op>.default``).
    call: Callable[..., torch.Tensor]
    overload: Any
    #: The op's reference in PyTorch (ops/<op>.py): the tests evaluate it in float64 for the exact result.
    reference: Callable[..., torch.Tensor]
    #: The bound on the op's rounding error, in units of u (see error_model.py), written from its expression.
    error_bound: Callable[..., torch.Tensor]
    #: The dtypes the op supports.
    dtypes: tuple[torch.dtype, ...]
    #: The names of the inputs and weights, as the op's messages give them.
    inputs: tuple[str, ...] = ()
    weights: tuple[str, ...] = ()
    #: Whether the expression is real and smooth only for positive arguments (the inputs are then drawn
    #: from [0.5, 2.5) instead of a standard normal).
    positive_domain: bool = False
    #: The generated backward op (``torch.ops.rmsnorm.<op>_backward.default``: the gradients of the inputs,
    #: and of a rowwise op's weights, flagged in its last argument) and the bound on their rounding errors,
    #: one per input (and weight), or None where the op's backward is the vjp of its reference.
    backward: Any = None
    grad_error_bound: Callable[..., tuple] | None = None

    def error_model(self, dtype: torch.dtype) -> ErrorModel:
        return ErrorModel(dtype, self.backend)

    def message(self, text: str) -> str:
        """A regular expression for the op's message ``<op>: text`` (text is a regular expression)."""
        return re.escape(self.name) + ": " + text

    @property
    def cuda_skip_reason(self) -> str | None:
        """Why the op has no CUDA implementation to test here, or None."""
        if not torch.cuda.is_available():
            return "no CUDA GPU visible"
        if self.backend == "triton":
            ops_module = importlib.import_module(f"{__package__.rpartition('.')[0]}.ops.{self.name}")
            if not ops_module.TRITON_AVAILABLE:
                return f"triton is not installed, so {self.name} has no CUDA implementation"
        elif not WITH_CUDA:
            return f"{self.name} was built without CUDA (no toolkit at build time)"
        return None


def requires_cuda(test):
    """Marks a test method that runs on CUDA only: it skips, with the reason, where the op has no CUDA
    implementation to test."""
    test.requires_cuda = True
    return test


class Suite:
    """The base of every kind's suite. pytest collects the tests of a subclass named Test*, which sets
    ``op``; ``device`` and ``dtype`` arguments run over the devices and the op's dtypes."""

    op: OpUnderTest

    def pytest_generate_tests(self, metafunc):
        cuda = pytest.param("cuda", marks=pytest.mark.skipif(self.op.cuda_skip_reason is not None,
                                                            reason=self.op.cuda_skip_reason or ""))
        if "dtype" in metafunc.fixturenames:
            metafunc.parametrize("dtype", self.op.dtypes, ids=str)
        if "device" in metafunc.fixturenames:
            metafunc.parametrize("device", ["cpu", cuda])

    @pytest.fixture(autouse=True)
    def _skip_without_cuda(self, request):
        if getattr(request.function, "requires_cuda", False) and self.op.cuda_skip_reason is not None:
            pytest.skip(self.op.cuda_skip_reason)
