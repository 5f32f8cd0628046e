"""The test suite of myteam_ops's matmul ops (C = epilogue(A @ B [, bias])), on CPU and CUDA, for
every dtype an op supports.

An op's tests/test_<op>.py runs it with ``class TestMyOp(MatmulSuite): op = MatmulOp(...)``. Run: pytest -q.
CUDA tests skip, with the reason, when no GPU is visible or the extension was built without CUDA.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from .error_model import per_element
from .suite import Mismatches, OpUnderTest, Suite, assert_as_close_as_eager, requires_cuda, seeded, without_compile_caches

__all__ = ["HopperPathChecks", "MatmulOp", "MatmulSuite"]

# torch.compile against eager calls of the op (with the largest error eager makes: assert_as_close_as_eager):
# torch.testing's default tolerances of each dtype.
COMPILE_TOLERANCES = {
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
    torch.float16: dict(rtol=1e-3, atol=1e-5),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-5),
}

# (M, K, N): ragged sizes that are not multiples of any tile, degenerate ones, tile-aligned ones,
# and ones with K and N multiples of 8 (the tensor-core kernel's 16-byte load path) but ragged M.
SHAPES = [(1, 1, 1), (17, 33, 65), (127, 129, 255), (1, 4096, 1), (4096, 1, 4096), (128, 64, 256),
          (130, 72, 136), (300, 40, 24)]


@dataclasses.dataclass(frozen=True)
class MatmulOp(OpUnderTest):
    """A matmul op: whether it takes a bias, whether it has an epilogue (``fused``), with a generated
    backward (``backward``: the epilogue's, ``torch.ops.<ns>.<op>_backward.default``) whether its training
    forward stores the accumulator (``with_acc``: ``torch.ops.<ns>.<op>_with_acc.default``, or None), and the
    dtypes whose product it takes from cuBLAS on the GPU (``library_dtypes``), then applying its epilogue
    in a pass of its own."""

    bias: bool = False
    fused: bool = False
    with_acc: Any = None
    library_dtypes: tuple = ()


def make(shape, dtype, device, seed):
    generator = seeded(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


@functools.lru_cache(maxsize=None)
def _bias(n, dtype, device):
    return make((n,), dtype, device, 99)


def cuda_kernels(fn):
    """The names of the CUDA kernels that fn() launches."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {event.name for event in prof.events() if event.device_type == torch.autograd.DeviceType.CUDA}


# (case, A shape, B shape, A's storage offset in elements, whether CUTLASS takes it): which kernel runs
# is part of the contract. CUTLASS (TMA) takes K and N multiples of 8 with 16-byte aligned pointers,
# ragged M, N and K included, in its Large configuration (128 x 256 tiles) when they fill at least half
# of the SMs, else in Tiny (64 x 128); everything else falls back to the hand-written tensor-core kernel.
HOPPER_CASES = [
    ("large_tiles", (1160, 264), (264, 2056), 0, True),  # 90 Large tiles; M, N and K ragged
    ("large_batched", (3, 520, 72), (3, 72, 2056), 0, True),  # 135 Large tiles over 3 batches
    ("tiny_tiles", (520, 264), (264, 1048), 0, True),  # 25 Large tiles: Tiny's 144
    ("small_k", (130, 40), (40, 24), 0, True),  # K below one k-tile, N below one tile
    ("tiny_batched", (3, 130, 72), (3, 72, 136), 0, True),
    ("k_not_multiple_of_8", (130, 66), (66, 136), 0, False),
    ("n_not_multiple_of_8", (130, 72), (72, 134), 0, False),
    ("misaligned", (130, 64), (64, 136), 1, False),
]


class MatmulSuite(Suite):
    """Every test of a matmul op: results within the error model (the dot product of length K, then the
    epilogue) over ragged, degenerate, batched and strided shapes, autograd, opcheck, torch.compile,
    determinism, the messages for bad arguments, streams and CUDA graphs, and on sm_90 which kernel
    (CUTLASS or the fallback) takes which shape."""

    op: MatmulOp

    def bias_for(self, b):
        """The bias the tests pass with B: N elements of B's dtype, on B's device. One tensor per shape,
        made once: a CUDA graph capture must not copy a new one from the CPU."""
        return _bias(b.shape[-1], b.dtype, b.device)

    def run(self, a, b):
        """The op under test (with the bias of bias_for(b) if it takes one)."""
        return self.op.call(a, b, self.bias_for(b)) if self.op.bias else self.op.call(a, b)

    def expected_and_bound(self, a, b):
        """The exact result (reference() in float64 on the same, already rounded inputs) and the error
        each element of the op may have: the dot product of length K in op-math precision (dot_error),
        its rounding to the dtype where cuBLAS's product is stored before the epilogue's pass reads it
        (library_dtypes), then the epilogue's rounding (the error model)."""
        error_model = self.op.error_model(a.dtype)
        a64, b64 = a.double(), b.double()
        bias = (self.bias_for(b).double(),) if self.op.bias else ()
        want = self.op.reference(a64, b64, *bias)
        acc = torch.matmul(a64, b64)
        acc_error = error_model.dot_error(a64, b64)
        if self.op.fused and a.device.type == "cuda" and a.dtype in self.op.library_dtypes:
            acc_error = acc_error + error_model.stored_rounding(acc)
        return want, error_model.allowed_error(want, self.op.error_bound(error_model, acc, *bias, acc_error))

    def assert_matches(self, out, a, b):
        """Asserts that every element of out is within its error bound of the exact result."""
        want, allowed_err = self.expected_and_bound(a, b)
        assert out.shape == want.shape
        mismatches = Mismatches(out)
        mismatches.check_piece(out.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
        mismatches.check()

    def _with_bias(self, *tensors, seed, device, dtype=None):
        """tensors, plus a bias of N = tensors[1].shape[-1] elements when the op takes one."""
        if not self.op.bias:
            return tensors
        return (*tensors, make((tensors[1].shape[-1],), dtype or tensors[1].dtype, device, seed))

    # ---- results ----

    @pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
    def test_matches_reference(self, device, dtype, mkn):
        m, k, n = mkn
        a, b = make((m, k), dtype, device, 0), make((k, n), dtype, device, 1)
        out = self.run(a, b)
        assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
        assert torch.isfinite(out).all()  # every element written (the allocation is uninitialized)
        self.assert_matches(out, a, b)

    def test_batched(self, device, dtype):
        a, b = make((3, 33, 17), dtype, device, 2), make((3, 17, 40), dtype, device, 3)
        out = self.run(a, b)
        assert out.shape == (3, 33, 40)
        self.assert_matches(out, a, b)

    def test_empty_cases(self, device, dtype):
        a0, b0 = make((5, 0), dtype, device, 0), make((0, 7), dtype, device, 0)
        k0 = self.run(a0, b0)
        assert k0.shape == (5, 7)
        if self.op.fused:
            self.assert_matches(k0, a0, b0)  # the epilogue of acc = 0
        else:
            assert torch.equal(k0, torch.zeros(5, 7, dtype=dtype, device=device))
        assert self.run(make((0, 4), dtype, device, 0), make((4, 7), dtype, device, 0)).shape == (0, 7)
        assert self.run(make((5, 4), dtype, device, 0), make((4, 0), dtype, device, 0)).shape == (5, 0)
        assert self.run(make((0, 5, 4), dtype, device, 0), make((0, 4, 3), dtype, device, 0)).shape == (0, 5, 3)

    @pytest.mark.parametrize("view", ["transposed", "sliced", "misaligned"])
    def test_non_contiguous_and_misaligned(self, device, dtype, view):
        if view == "transposed":
            a, b = make((64, 130), dtype, device, 4).t(), make((72, 64), dtype, device, 5).t()
        elif view == "sliced":
            a, b = make((130, 150), dtype, device, 4)[:, ::2], make((75, 90), dtype, device, 5)[:, 3:83]
        else:  # contiguous views whose data starts one element into the storage: not 16-byte aligned
            a = make((130 * 64 + 1,), dtype, device, 4)[1:].view(130, 64)
            b = make((64 * 136 + 1,), dtype, device, 5)[1:].view(64, 136)
        self.assert_matches(self.run(a, b), a, b)

    # ---- autograd and torch.compile ----

    def test_gradcheck(self, device):
        if torch.float64 not in self.op.dtypes:
            pytest.skip(f"float64 is not among {self.op.name}'s dtypes, and gradcheck needs it")
        f64 = torch.float64
        args = self._with_bias(make((7, 5), f64, device, 6), make((5, 3), f64, device, 7), seed=21, device=device)
        args = [t.requires_grad_() for t in args]
        assert torch.autograd.gradcheck(self.op.overload, args)
        batched = [make((2, 4, 5), f64, device, 8).requires_grad_(), make((2, 5, 3), f64, device, 9).requires_grad_()]
        assert torch.autograd.gradcheck(self.op.overload, batched + args[2:])
        if not self.op.fused:
            assert torch.autograd.gradgradcheck(self.op.overload, args)

    @pytest.mark.parametrize("requires_grad", [False, True])
    def test_opcheck(self, device, requires_grad):
        dtype = self.op.dtypes[0]
        args = self._with_bias(make((9, 6), dtype, device, 10), make((6, 11), dtype, device, 11), seed=22, device=device)
        torch.library.opcheck(self.op.overload, [t.requires_grad_(requires_grad) for t in args])
        torch.library.opcheck(self.op.overload, self._with_bias(make((2, 3, 4), dtype, device, 12),
                                                                make((2, 4, 5), dtype, device, 13), seed=23, device=device))

    def test_torch_compile_fullgraph(self, device):
        torch._dynamo.reset()
        with without_compile_caches():
            dtype = self.op.dtypes[0]
            inputs = self._with_bias(make((33, 17), dtype, device, 14), make((17, 9), dtype, device, 15), seed=26, device=device)
            inputs = [t.requires_grad_() for t in inputs]

            def f(*args):
                return self.op.call(*args).relu()

            compiled = torch.compile(f, fullgraph=True)
            out = compiled(*inputs)
            # Each result against eager's and the exact one (reference() in float64 on the same values), with
            # torch.testing's default tolerances of the dtype
            tolerance = COMPILE_TOLERANCES[dtype]
            leaves = [t.detach().double().requires_grad_() for t in inputs]
            exact = self.op.reference(*leaves).relu()
            eager = f(*inputs)
            assert_as_close_as_eager(out, eager, exact, **tolerance)
            grads = torch.autograd.grad(out.sum(), inputs)
            want = torch.autograd.grad(eager.sum(), inputs)
            exact_grads = torch.autograd.grad(exact.sum(), leaves, allow_unused=True)
            for got, ref, ideal in zip(grads, want, exact_grads, strict=True):
                assert_as_close_as_eager(got, ref, torch.zeros_like(ref) if ideal is None else ideal, **tolerance)

    # ---- the generated backward (an op with backward=...) ----

    def _needs_backward(self):
        if self.op.backward is None:
            pytest.skip(f"{self.op.name}'s backward is {'two products with the op itself' if not self.op.fused else 'the vjp of its reference'}")

    @staticmethod
    def _needs_a_wider_reference(dtype):
        # The exact gradients are the vjp of reference() in float64: exact enough for a float32 or 16-bit
        # op, not for a float64 one, whose gradients test_gradcheck checks instead.
        if dtype == torch.float64:
            pytest.skip("float64 gradients are checked by gradcheck: the float64 vjp of reference() is no more exact than the op")

    def backward_args(self, shape, dtype, device, seed):
        """The backward op's arguments for an output of `shape`, after the output's gradient: the stored
        accumulator (an op whose training forward stores one) and the bias (an op with one)."""
        acc = [make(shape, dtype, device, seed)] if self.op.with_acc is not None else []
        return acc + ([make(shape[-1:], dtype, device, seed + 1)] if self.op.bias else [])

    @property
    def backward_flags(self):
        """The backward op's `_needs` flags: dacc, and the bias's gradient for an op with a bias."""
        return 2 if self.op.bias else 1

    def _leaves(self, a, b, requires=(True, True, True)):
        args = [a, b, self.bias_for(b)] if self.op.bias else [a, b]
        return [x.detach().clone().requires_grad_(need) for x, need in zip(args, requires)]

    def exact_gradients(self, a, b, grad):
        """The exact gradients (dL/dA, dL/dB[, dL/dbias]: the vjp of reference() in float64 on the same,
        already rounded values) and the error each element may have. The model follows the backward:
        the accumulator as the forward stored it (the dot product's error, then its rounding to the
        dtype); the epilogue's derivative at it (grad_error_bound), rounded to the dtype; then the
        products of length N (dL/dA) and M (dL/dB) in op-math, and the bias's column sum."""
        m = self.op.error_model(a.dtype)
        a64, b64, g64 = a.double(), b.double(), grad.double()
        bias = [self.bias_for(b).double()] if self.op.bias else []
        leaves = [x.clone().requires_grad_() for x in (a64, b64, *bias)]
        wants = torch.autograd.grad(self.op.reference(*leaves), leaves, g64)
        acc = torch.matmul(a64, b64)
        acc_error = m.dot_error(a64, b64) + m.stored_rounding(acc)
        n = acc.shape[-1]
        # The epilogue's derivatives element by element: reference() of (acc, identity) is the epilogue of acc;
        # a bias broadcast to the output's shape gives each element's contribution to the bias's gradient.
        acc_leaf = acc.clone().requires_grad_()
        bias_full = [bias[0].expand(acc.shape).clone().requires_grad_()] if bias else []
        eye = torch.eye(n, dtype=torch.float64, device=acc.device)
        exact = torch.autograd.grad(self.op.reference(acc_leaf, eye, *bias_full), [acc_leaf, *bias_full], g64)
        bounds = self.op.grad_error_bound(m, g64, acc, *bias, acc_error)
        dacc = exact[0]
        dacc_error = per_element(dacc, bounds[0]) + m.stored_rounding(dacc)
        a_error = torch.matmul(dacc_error, b64.abs().transpose(-1, -2)) + m.dot_error(dacc, b64.transpose(-1, -2))
        b_error = torch.matmul(a64.abs().transpose(-1, -2), dacc_error) + m.dot_error(a64.transpose(-1, -2), dacc)
        result = [(wants[0], m.allowed_error(wants[0], a_error)), (wants[1], m.allowed_error(wants[1], b_error))]
        if bias:
            rows = exact[1].reshape(-1, n)
            total, total_error = m.sum_of_column(rows, per_element(exact[1], bounds[1]).reshape(-1, n), like=rows)
            result.append((total, m.allowed_error(total, total_error)))
        return result

    def assert_gradients_match(self, grads, a, b, grad, which=None):
        """Each gradient in grads (those of the arguments flagged in `which`, default all) within its bound."""
        expected = self.exact_gradients(a, b, grad)
        if which is not None:
            expected = [e for e, need in zip(expected, which) if need]
        assert len(grads) == len(expected)
        for got, (want, allowed_err) in zip(grads, expected):
            assert got.shape == want.shape and got.dtype == grad.dtype
            mismatches = Mismatches(got)
            mismatches.check_piece(got.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
            mismatches.check()

    @pytest.mark.parametrize("shape", [(17, 33, 65), (130, 72, 136), (2, 33, 40, 24), (1, 4096, 1)], ids=lambda s: "x".join(map(str, s)))
    def test_backward_matches_the_exact_gradients(self, device, dtype, shape):
        """Every gradient through autograd (the training forward, the generated backward and the two
        products) within its error bound of the exact one."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        *batch, m, k, n = shape
        a, b = make((*batch, m, k), dtype, device, 40), make((*batch, k, n), dtype, device, 41)
        grad = make((*batch, m, n), dtype, device, 42)
        leaves = self._leaves(a, b)
        grads = torch.autograd.grad(self.op.call(*leaves), leaves, grad)
        self.assert_gradients_match(grads, a, b, grad)

    def test_backward_with_a_non_contiguous_grad_and_arguments_without_grad(self, device, dtype):
        """A transposed output gradient, and every subset of the arguments requiring grad: the gradients
        asked for, each within its bound."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        a, b = make((130, 72), dtype, device, 43), make((72, 136), dtype, device, 44)
        grad = make((136, 130), dtype, device, 45).t()
        assert not grad.is_contiguous()
        count = 3 if self.op.bias else 2
        for mask in range(1, 2**count):
            requires = [bool(mask >> j & 1) for j in range(count)]
            leaves = self._leaves(a, b, requires)
            wanted = [x for x in leaves if x.requires_grad]
            grads = torch.autograd.grad(self.op.call(*leaves), wanted, grad)
            self.assert_gradients_match(grads, a, b, grad, which=requires)

    def test_backward_op_returns_the_gradients_asked_for(self, device):
        """The backward op's `_needs`: each subset gets exactly its gradients, in order, bitwise equal to
        those of the full call."""
        self._needs_backward()
        dtype = self.op.dtypes[0]
        grad = make((70, 40), dtype, device, 46)
        extra = self.backward_args((70, 40), dtype, device, 47)
        count = self.backward_flags
        every = self.op.backward(grad, *extra, [True] * count)
        assert len(every) == count and every[0].shape == grad.shape
        for mask in range(2**count):
            needs = [bool(mask >> j & 1) for j in range(count)]
            got = self.op.backward(grad, *extra, needs)
            assert len(got) == sum(needs)
            for g, want in zip(got, [e for e, need in zip(every, needs) if need]):
                assert torch.equal(g, want)

    def test_backward_bitwise_deterministic(self, device, dtype):
        """No atomics: the same gradients, bit for bit, call after call (the bias's column sum included)."""
        self._needs_backward()
        a, b = make((600, 64), dtype, device, 49), make((64, 264), dtype, device, 50)
        grad = make((600, 264), dtype, device, 51)
        runs = []
        for _ in range(2):
            leaves = self._leaves(a, b)
            runs.append(torch.autograd.grad(self.op.call(*leaves), leaves, grad))
        for first, second in zip(*runs):
            assert torch.equal(first, second)

    def test_backward_gradcheck_through_the_training_forward(self, device):
        self._needs_backward()
        if torch.float64 not in self.op.dtypes:
            pytest.skip(f"float64 is not among {self.op.name}'s dtypes, and gradcheck needs it")
        f64 = torch.float64
        args = self._with_bias(make((2, 7, 5), f64, device, 52), make((2, 5, 3), f64, device, 53), seed=54, device=device)
        assert torch.autograd.gradcheck(self.op.call, [t.requires_grad_() for t in args])

    def test_training_forward_stores_the_accumulator(self, device, dtype):
        """with_acc's output is the op's, bit for bit, and its accumulator is A @ B within the dot
        product's error and one rounding to the dtype."""
        if self.op.with_acc is None:
            pytest.skip(f"{self.op.name}'s backward does not read the accumulator, so its forward stores none")
        a, b = make((130, 72), dtype, device, 55), make((72, 136), dtype, device, 56)
        args = (a, b, self.bias_for(b)) if self.op.bias else (a, b)
        out, acc = self.op.with_acc(*args)
        assert torch.equal(out, self.op.overload(*args))
        self.assert_accumulator(acc, a, b)

    def assert_accumulator(self, acc, a, b):
        """acc within the dot product's error of A @ B, plus its rounding to the dtype (allowed_error's)."""
        m = self.op.error_model(a.dtype)
        a64, b64 = a.double(), b.double()
        want = torch.matmul(a64, b64)
        allowed = m.allowed_error(want, m.dot_error(a64, b64))
        mismatches = Mismatches(acc)
        mismatches.check_piece(acc.reshape(-1), want.reshape(-1), allowed.reshape(-1))
        mismatches.check()

    def test_backward_opcheck(self, device):
        self._needs_backward()
        dtype = self.op.dtypes[0]
        grad = make((9, 11), dtype, device, 57)
        torch.library.opcheck(self.op.backward, (grad, *self.backward_args((9, 11), dtype, device, 58), [True] * self.backward_flags))
        if self.op.with_acc is not None:
            args = self._with_bias(make((9, 6), dtype, device, 60), make((6, 11), dtype, device, 61), seed=62, device=device)
            torch.library.opcheck(self.op.with_acc, [t.requires_grad_() for t in args])

    def test_backward_op_errors(self, device):
        self._needs_backward()
        dtype = self.op.dtypes[0]
        grad = make((3, 5), dtype, device, 0)
        extra = self.backward_args((3, 5), dtype, device, 0)
        with pytest.raises(RuntimeError, match=re.escape(f"{self.op.name}_backward: _needs must have")):
            self.op.backward(grad, *extra, [True] * 3)
        if self.op.with_acc is not None:
            with pytest.raises(RuntimeError, match=re.escape(f"{self.op.name}_backward: grad is [3, 5] but acc is [3, 4]")):
                self.op.backward(grad, make((3, 4), dtype, device, 0), *extra[1:], [True] * self.backward_flags)

    @pytest.mark.large
    @requires_cuda
    def test_backward_op_more_than_2_pow_31_elements(self):
        # The backward kernel's indexing past 2**31: dacc within its bound at the head, across the 2**31
        # boundary and at the tail. (The bias's gradient sums every row: its kernel is checked above.)
        self._needs_backward()
        dtype = min(self.op.dtypes, key=lambda d: d.itemsize)
        self._needs_a_wider_reference(dtype)
        n = 1024
        rows = 2**31 // n + 2**10 + 3
        arrays = 3 + (self.op.with_acc is not None)
        need = arrays * rows * n * dtype.itemsize
        free, _ = torch.cuda.mem_get_info()
        if free < need * 1.1:
            pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
        grad = torch.empty(rows, n, dtype=dtype, device="cuda").normal_(generator=seeded(63, "cuda"))
        acc = torch.empty(rows, n, dtype=dtype, device="cuda").normal_(generator=seeded(64, "cuda"))
        bias = [make((n,), dtype, "cuda", 65)] if self.op.bias else []
        extra = ([acc] if self.op.with_acc is not None else []) + bias
        dacc = self.op.backward(grad, *extra, [True] + [False] * len(bias))[0]
        m = self.op.error_model(dtype)
        eye = torch.eye(n, dtype=torch.float64, device="cuda")
        for start in (0, 2**31 // n - 4, rows - 4):
            window = slice(start, start + 4)
            acc_leaf = acc[window].double().requires_grad_()
            g64 = grad[window].double()
            b64 = [x.double() for x in bias]
            want = torch.autograd.grad(self.op.reference(acc_leaf, eye, *b64), acc_leaf, g64)[0]
            bound = self.op.grad_error_bound(m, g64, acc_leaf.detach(), *b64, 0.0)[0]
            mismatches = Mismatches(dacc[window])
            mismatches.check_piece(dacc[window].reshape(-1), want.reshape(-1), m.allowed_error(want, bound).reshape(-1))
            mismatches.check()

    def forward_kernels(self, a, b):
        """The names of the CUDA kernels the forward launches on (a, b), then the training forward's where the
        op has one. Skips the test when the profiler sees none (CUPTI held by another tool)."""
        args = (a, b, self.bias_for(b)) if self.op.bias else (a, b)
        calls = [lambda: self.run(a, b)]
        if self.op.with_acc is not None:
            calls.append(lambda: self.op.with_acc(*args))
        found = []
        for call in calls:
            kernels = cuda_kernels(call)
            if not kernels:  # every call launches a kernel, so an empty list means the profiler is blind
                pytest.skip("the profiler saw no CUDA kernel (CUPTI is held by another tool, such as compute-sanitizer): "
                            "which kernel ran is unchecked")
            found.append(kernels)
        return found

    @requires_cuda
    def test_which_kernels_compute_each_dtype(self):
        """An op's library_dtypes (float32 and float64; float16 and bfloat16 too under a heavy epilogue) take
        cuBLAS's product, then the epilogue's own pass (kg::gemm's epilogue_kernel) where there is an
        epilogue; every other dtype runs the package's own product kernels. The training forward follows the
        same path."""
        for dtype in self.op.dtypes:
            a, b = make((96, 80), dtype, "cuda", 24), make((80, 72), dtype, "cuda", 25)
            for kernels in self.forward_kernels(a, b):
                # the package's kernels, by their names as the profiler gives them (demangled or not)
                ours = sorted(name for name in kernels
                              if "kg::gemm::" in name or "2kg4gemm" in name or ("cutlass" in name and "device_kernel" in name))
                if dtype in self.op.library_dtypes:
                    assert [name for name in ours if "epilogue_kernel" not in name] == [], sorted(kernels)
                    assert any("epilogue_kernel" in name for name in ours) == self.op.fused, sorted(kernels)
                else:
                    assert ours and not any("epilogue_kernel" in name for name in ours), sorted(kernels)

    def test_bitwise_deterministic(self, device, dtype):
        a, b = make((257, 300), dtype, device, 16), make((300, 129), dtype, device, 17)
        assert torch.equal(self.run(a, b), self.run(a, b))

    # ---- bad arguments: one clear message each ----

    def test_error_inner_dimension_mismatch(self, device):
        dtype = self.op.dtypes[0]
        with pytest.raises(RuntimeError, match=self.op.message(r"inner dimensions differ: A \[3, 4\] has 4 columns but B \[5, 6\] has 5 rows")):
            self.run(make((3, 4), dtype, device, 0), make((5, 6), dtype, device, 0))

    def test_error_rank(self, device):
        dtype = self.op.dtypes[0]
        with pytest.raises(RuntimeError, match=self.op.message(r"expected A and B both 2-D .* got A \[3\] and B \[3, 2\]")):
            self.run(make((3,), dtype, device, 0), make((3, 2), dtype, device, 0))
        with pytest.raises(RuntimeError, match=r"got A \[2, 3, 4\] and B \[4, 5\]"):
            self.run(make((2, 3, 4), dtype, device, 0), make((4, 5), dtype, device, 0))

    def test_error_batch_mismatch(self, device):
        dtype = self.op.dtypes[0]
        with pytest.raises(RuntimeError, match=self.op.message(r"batch sizes differ: A \[2, 3, 4\], B \[3, 4, 5\]")):
            self.run(make((2, 3, 4), dtype, device, 0), make((3, 4, 5), dtype, device, 0))

    def test_error_dtypes(self, device):
        dtype = self.op.dtypes[0]
        if len(self.op.dtypes) > 1:
            with pytest.raises(RuntimeError, match=self.op.message(r"B has dtype .* but A has dtype")):
                self.run(make((3, 4), dtype, device, 0), make((4, 5), self.op.dtypes[1], device, 0))
        with pytest.raises(RuntimeError, match=self.op.message(rf"A has dtype Int, but {self.op.name} supports")):
            self.run(torch.ones(3, 4, dtype=torch.int32, device=device), torch.ones(4, 5, dtype=torch.int32, device=device))

    @requires_cuda
    def test_error_device_mismatch(self):
        dtype = self.op.dtypes[0]
        with pytest.raises(RuntimeError, match=self.op.message(r"B is on cpu but A is on cuda")):
            self.run(make((3, 4), dtype, "cuda", 0), make((4, 5), dtype, "cpu", 0))

    def test_error_not_a_tensor(self):
        dtype = self.op.dtypes[0]
        bias = (make((5,), dtype, "cpu", 0),) if self.op.bias else ()
        with pytest.raises(TypeError, match=self.op.message(r"B must be a torch.Tensor, got list")):
            self.op.call(make((3, 4), dtype, "cpu", 0), [[1.0]], *bias)

    def test_error_bias(self, device):
        if not self.op.bias:
            pytest.skip(f"{self.op.name} takes no bias")
        dtype = self.op.dtypes[0]
        a, b = make((3, 4), dtype, device, 0), make((4, 5), dtype, device, 0)
        with pytest.raises(RuntimeError, match=self.op.message(r"bias must be 1-D with N = 5 elements \(B is \[4, 5\]\), got bias \[4\]")):
            self.op.call(a, b, make((4,), dtype, device, 0))
        with pytest.raises(RuntimeError, match=self.op.message(r"bias must be 1-D .* got bias \[1, 5\]")):
            self.op.call(a, b, make((1, 5), dtype, device, 0))
        if len(self.op.dtypes) > 1:
            with pytest.raises(RuntimeError, match=self.op.message(r"bias has dtype .* but A has dtype")):
                self.op.call(a, b, make((5,), self.op.dtypes[1], device, 0))

    # ---- CUDA: streams and graphs ----

    @requires_cuda
    def test_current_stream_and_cuda_graph(self):
        dtype = self.op.dtypes[0]
        a, b = make((200, 96), dtype, "cuda", 18), make((96, 136), dtype, "cuda", 19)
        self.run(a, b)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.run(a, b)
        a.copy_(make((200, 96), dtype, "cuda", 20))
        graph.replay()
        torch.cuda.synchronize()
        self.assert_matches(out, a, b)


class HopperPathChecks:
    """Added to MatmulSuite for an op with a CUTLASS path for sm_90 (H100, H200), as
    ``class TestMyOp(HopperPathChecks, MatmulSuite)``: which kernel takes which shape, in float16 and
    bfloat16 (``half_dtype``)."""

    def pytest_generate_tests(self, metafunc):
        super().pytest_generate_tests(metafunc)
        if "half_dtype" in metafunc.fixturenames:
            metafunc.parametrize("half_dtype", [d for d in self.op.dtypes if d in (torch.float16, torch.bfloat16)], ids=str)

    def hopper_path_reason(self):
        """Why the CUTLASS sm_90 path cannot be tested here, or None."""
        if self.op.cuda_skip_reason is not None:
            return self.op.cuda_skip_reason
        if torch.cuda.get_device_capability() != (9, 0):
            return "the CUTLASS path runs on sm_90 GPUs (H100, H200) only"
        info = Path(__file__).resolve().parent.parent / "_build_info.json"
        recorded = json.loads(info.read_text()) if info.is_file() else {}
        if not recorded.get("cutlass_sm90"):
            return recorded.get("cutlass_sm90_left_out") or (
                "myteam_ops was built without the CUTLASS path (no 9.0 target, or KERNELGEN_NO_CUTLASS=1)")
        return None

    @pytest.mark.parametrize("case", HOPPER_CASES, ids=lambda c: c[0])
    def test_hopper_path_and_its_fallback(self, half_dtype, case):
        if self.hopper_path_reason() is not None:
            pytest.skip(self.hopper_path_reason())
        dtype = half_dtype
        _, a_shape, b_shape, offset, takes_cutlass = case
        a = make((math.prod(a_shape) + offset,), dtype, "cuda", 21)[offset:].view(a_shape)
        b = make((math.prod(b_shape) + offset,), dtype, "cuda", 22)[offset:].view(b_shape)
        self.assert_matches(self.run(a, b), a, b)
        # The CUTLASS launch is stream-ordered and allocation-free, so it can be captured in a CUDA graph.
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            replayed = self.run(a, b)
        a.copy_(make(a_shape, dtype, "cuda", 23))
        graph.replay()
        torch.cuda.synchronize()
        self.assert_matches(replayed, a, b)
        if self.op.with_acc is not None:  # the training forward: the same output, and the accumulator
            args = (a, b, self.bias_for(b)) if self.op.bias else (a, b)
            out, acc = self.op.with_acc(*args)
            assert torch.equal(out, self.run(a, b))
            self.assert_accumulator(acc, a, b)
        for kernels in self.forward_kernels(a, b):
            assert any("cutlass" in name for name in kernels) == takes_cutlass, sorted(kernels)
