"""The test suite of myteam_ops's rowwise ops, on CPU and CUDA, for every dtype an op supports.

An op's tests/test_<op>.py runs it with ``class TestMyOp(RowwiseSuite): op = OpUnderTest(...)``. A rowwise
op takes inputs of one shape, whose last dimension is the row, and weights of one value per element of
a row. Run: pytest -q (add -m "not large" to skip the >2**31-element CUDA test). CUDA tests skip, with
the reason, when no GPU is visible or the op has no CUDA implementation here.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from .suite import Mismatches, OpUnderTest, Suite, assert_as_close_as_eager, requires_cuda, seeded, without_compile_caches

__all__ = ["OpUnderTest", "RowwiseSuite"]

# Tolerances of the tests that compare PyTorch's arithmetic with itself: the backward (the vjp of
# reference() in op-math precision, in the op and in the test alike) and torch.compile against eager
# calls of the op (there, with the largest error eager makes: assert_as_close_as_eager). The op's own
# results are held to the error model instead.
TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-9, atol=1e-11),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}
#: Elements checked at a time (whole rows): the float64 reference and its bound hold about 20 tensors
#: of this size.
CHUNK = 2**22
#: Elements of rows whose exact gradients and bounds are computed at a time: a heavy derivative's bound
#: holds a few hundred float64 tensors of this size (a few GiB at most, on any GPU the suite runs on).
GRAD_CHUNK = 2**20
# Row lengths around a warp (31, 32, 33), odd ones that defeat 16-byte vectors (1000 in float64 is
# fine, 4099 is not), the last row one block holds in registers (16384), the first that takes a cluster
# of blocks on the GPU (16385), a cluster of four blocks with 16-byte vectors and without (65536, 65537),
# one of sixteen or, for one 2-byte input, of eight blocks of 64 elements a thread (262144), and a row past
# the largest cluster, which takes the multi-pass kernel (262147).
ROW_LENGTHS = [1, 31, 32, 33, 1000, 4099, 16384, 16385, 65536, 65537, 262144, 262147]


class RowwiseSuite(Suite):
    """Every test of a rowwise op: results within the error model over many row lengths and shapes,
    views and alignment, large values, autograd (weights included), opcheck, torch.compile,
    determinism, the messages for bad arguments, streams, CUDA graphs and more than 2**31 elements."""

    # ---- arguments and the check of a result ----

    def sample(self, shape, dtype, device, generator):
        """Standard normal values (random signs and magnitudes, never all zeros), or uniform in
        [0.5, 2.5) for an expression that needs positive arguments (a log, a root, a division)."""
        if self.op.positive_domain:
            values = torch.rand(shape, generator=generator, dtype=torch.float64, device=generator.device) * 2 + 0.5
        else:
            values = torch.randn(shape, generator=generator, dtype=torch.float64, device=generator.device)
        return values.to(device=device, dtype=dtype)

    def make_args(self, shape, dtype, device, seed=0):
        """The inputs (of ``shape``) followed by the weights (one value per element of a row)."""
        generator = seeded(seed)
        inputs = [self.sample(shape, dtype, device, generator) for _ in self.op.inputs]
        weights = [self.sample((shape[-1],), dtype, device, generator) for _ in self.op.weights]
        return inputs + weights

    def expected_and_bound(self, args):
        """The exact result (reference() in float64 on the same, already rounded inputs and weights) and
        the error each element of the op may have (the error model)."""
        error_model = self.op.error_model(args[0].dtype)
        exact_args = [t.double() for t in args]
        want = self.op.reference(*exact_args)
        return want, error_model.allowed_error(want, self.op.error_bound(error_model, *exact_args))

    def assert_matches(self, out, args):
        """Asserts that every element of out is within its error bound of the exact result."""
        assert out.shape == args[0].shape
        n_inputs = len(self.op.inputs)
        cols = out.shape[-1]
        rows = [t.reshape(-1, cols) for t in args[:n_inputs]]
        got = out.reshape(-1, cols)
        rows_per_chunk = max(1, CHUNK // max(cols, 1))
        mismatches = Mismatches(out)
        for start in range(0, got.shape[0], rows_per_chunk):
            want, allowed_err = self.expected_and_bound([t[start:start + rows_per_chunk] for t in rows] + list(args[n_inputs:]))
            mismatches.check_piece(got[start:start + rows_per_chunk].reshape(-1), want.reshape(-1), allowed_err.reshape(-1), offset=start * cols)
        mismatches.check()

    def sample_args(self, dtype, device):
        """The arguments of one ordinary call (the Triton eager fast path's tests use them)."""
        return self.make_args((64, 1000), dtype, device, seed=21)

    # ---- results ----

    @pytest.mark.parametrize("cols", ROW_LENGTHS)
    def test_matches_reference(self, device, dtype, cols):
        args = self.make_args((5, cols), dtype, device, seed=cols)
        out = self.op.call(*args)
        assert out.shape == args[0].shape and out.dtype == dtype and out.device == args[0].device
        assert out.is_contiguous()
        self.assert_matches(out, args)

    @pytest.mark.parametrize("shape", [(0, 7), (3, 0), (1000,), (2, 3, 33), (2, 1, 3, 129), (1333, 64)], ids=str)
    def test_shapes(self, device, shape):
        # No rows, empty rows, a single row (1-D), batches of rows in 3-D and 4-D, and many short rows
        # (several rows per block on the GPU, the last block part-filled).
        args = self.make_args(shape, self.op.dtypes[0], device, seed=1)
        out = self.op.call(*args)
        assert out.shape == args[0].shape
        if out.numel():
            self.assert_matches(out, args)

    @pytest.mark.parametrize("view", ["transposed", "strided_slice", "offset_1", "offset_weights"])
    def test_non_contiguous_and_misaligned(self, device, dtype, view):
        # Transposed and strided views take the .contiguous() path. Offset views start 1 element into
        # their storage: their pointers are not 16-byte aligned, so the CUDA kernel takes its scalar path.
        n_inputs = len(self.op.inputs)
        rows, cols = 37, 256
        if view == "transposed":
            base = self.make_args((cols, rows), dtype, device, seed=2)
            args = [t.t() for t in base[:n_inputs]] + self.make_args((rows, cols), dtype, device, seed=3)[n_inputs:]
        elif view == "strided_slice":
            args = [t[..., ::2] for t in self.make_args((rows, 2 * cols), dtype, device, seed=2)]
        elif view == "offset_1":
            args = self.make_args((rows, cols), dtype, device, seed=4)
            args[:n_inputs] = [torch.cat([t.new_zeros(1), t.flatten()])[1:].view(rows, cols) for t in args[:n_inputs]]
        else:
            if not self.op.weights:
                pytest.skip(f"{self.op.name} has no weights")
            args = self.make_args((rows, cols), dtype, device, seed=6)
            args[n_inputs:] = [torch.cat([t.new_zeros(1), t])[1:] for t in args[n_inputs:]]
        assert args[0].shape == (rows, cols)
        self.assert_matches(self.op.call(*args), args)

    def test_large_values(self, device):
        # Values around 1e4: a softmax that did not subtract the row's maximum first would overflow
        # (exp(1e4) is inf even in float64). Wherever the exact result is finite and op-math cannot
        # overflow on the way (the error model's bound is finite), the op must be finite and close.
        n_inputs = len(self.op.inputs)
        args = self.make_args((16, 1000), torch.float32, device, seed=7)
        args[:n_inputs] = [t * 1e4 for t in args[:n_inputs]]
        self.assert_matches(self.op.call(*args), args)

    @pytest.mark.parametrize("cols", [1000, 16385, 65536, 262144])
    def test_special_values_and_spread_maxima(self, device, cols):
        # Rows whose parts differ: the first half -inf, all -inf, one inf, one NaN, and ramps that put the
        # row's maximum 80 above the far end. On the GPU, rows past 16384 are held by several blocks, each
        # reducing its own part, and a softmax's sum is computed at each block's own maximum and brought
        # to the row's: these are the rows where that goes wrong. Non-finite exact results must be
        # matched exactly (NaN where the reference gives NaN); finite ones within their bound.
        n_inputs = len(self.op.inputs)
        args = self.make_args((7, cols), torch.float32, device, seed=11)
        x = args[0].clone()
        ramp = torch.linspace(0.0, 80.0, cols, device=x.device)
        x[1, : cols // 2] = -math.inf
        x[2] = -math.inf
        x[3, cols // 3] = math.inf
        x[4, 2 * cols // 3] = math.nan
        x[5] += ramp - 80.0
        x[6] -= ramp
        args[0] = x
        self.assert_matches(self.op.call(*args), args)

    # ---- autograd and torch.compile ----

    def test_gradcheck(self, device):
        if torch.float64 not in self.op.dtypes:
            pytest.skip(f"float64 is not among {self.op.name}'s dtypes, and gradcheck needs it")
        args = [t.requires_grad_() for t in self.make_args((3, 7), torch.float64, device, seed=8)]
        assert torch.autograd.gradcheck(self.op.overload, args, eps=1e-6, atol=1e-5, rtol=1e-4)

    def test_backward_matches_reference(self, device, dtype):
        if self.op.backward is not None:
            pytest.skip(f"{self.op.name}'s generated backward is held to its error bounds (test_backward_op_*)")
        args = [t.requires_grad_() for t in self.make_args((9, 130), dtype, device, seed=9)]
        grad_out = self.make_args((9, 130), dtype, device, seed=10)[0]
        grads = torch.autograd.grad(self.op.call(*args), args, grad_out)
        opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        leaves = [t.detach().to(opmath).requires_grad_() for t in args]
        ref_grads = torch.autograd.grad(self.op.reference(*leaves), leaves, grad_out.to(opmath))
        for got, want in zip(grads, ref_grads):
            # a weight's gradient sums over the rows: allow for that sum's rounding
            torch.testing.assert_close(got, want.to(dtype), **{k: 4 * v for k, v in TOLERANCES[dtype].items()})

    # ---- the generated backward (an op with backward=...) ----

    def _needs_backward(self):
        if self.op.backward is None:
            pytest.skip(f"{self.op.name}'s backward is the vjp of its reference")

    @staticmethod
    def _needs_a_wider_reference(dtype):
        # The exact gradients are the vjp of reference() in float64: exact enough for a float32 or 16-bit
        # op, not for a float64 one (autograd's own rounding is as large as the op's). The float64
        # gradients are checked by test_gradcheck instead.
        if dtype == torch.float64:
            pytest.skip("float64 gradients are checked by gradcheck: the float64 vjp of reference() is no more exact than the op")

    def exact_gradients(self, grad, args):
        """The exact gradients of the inputs and the weights (the vjp of reference() in float64 on the same,
        already rounded values) and the error each element of each may have (the error model of the
        derivatives; a weight's sums its contributions over the rows). Computed GRAD_CHUNK elements of rows
        at a time: a weight's gradient and its bound are sums over the rows, which add up across the pieces
        (ErrorModel.column_rows)."""
        error_model = self.op.error_model(grad.dtype)
        n_inputs, cols = len(self.op.inputs), grad.shape[-1]
        rows = [t.detach().double().reshape(-1, cols) for t in args[:n_inputs]]
        weights = [t.detach().double() for t in args[n_inputs:]]
        grad_rows = grad.detach().double().reshape(-1, cols)
        error_model.column_rows = grad_rows.shape[0]
        step = max(1, GRAD_CHUNK // max(cols, 1))
        wants = [[] for _ in rows] + [torch.zeros_like(w) for w in weights]
        bounds = [[] for _ in rows] + [torch.zeros_like(w) for w in weights]
        for start in range(0, max(grad_rows.shape[0], 1), step):
            piece = [t[start:start + step] for t in rows]
            leaves = [t.clone().requires_grad_() for t in piece + weights]
            piece_grad = grad_rows[start:start + step]
            piece_wants = torch.autograd.grad(self.op.reference(*leaves), leaves, piece_grad, allow_unused=True)
            piece_bounds = self.op.grad_error_bound(error_model, piece_grad, *piece, *weights)
            for j, (leaf, want, bound) in enumerate(zip(leaves, piece_wants, piece_bounds, strict=True)):
                want = torch.zeros_like(leaf) if want is None else want
                bound = torch.broadcast_to(torch.as_tensor(bound, dtype=torch.float64, device=leaf.device), leaf.shape)
                if j < n_inputs:
                    wants[j].append(want)
                    bounds[j].append(bound)
                else:
                    wants[j] = wants[j] + want
                    bounds[j] = bounds[j] + bound
        checks = []
        for j, (want, bound) in enumerate(zip(wants, bounds)):
            if j < n_inputs:
                want, bound = (torch.cat(pieces).reshape(args[j].shape) for pieces in (want, bound))
            checks.append((want, error_model.allowed_error(want, bound)))
        return checks

    def assert_gradients_match(self, grads, grad, args):
        for got, (want, allowed_err) in zip(grads, self.exact_gradients(grad, args), strict=True):
            assert got.shape == want.shape and got.dtype == grad.dtype and got.is_contiguous()
            mismatches = Mismatches(got)
            mismatches.check_piece(got.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
            mismatches.check()

    def backward_args(self, shape, dtype, device, seed):
        """The arguments and the output's gradient of one backward call."""
        return self.make_args(shape, dtype, device, seed=seed), self.sample(shape, dtype, device, seeded(seed + 1000, device))

    # Row lengths for each launch of the CUDA backward: the register kernel in blocks of up to 512 threads, its
    # 1024-thread build (aligned rows of 4096 and 8192, where the op's build holds them: one block an SM), the
    # cluster build and the multi-pass kernel (16384 and longer, 4099 misaligned), odd lengths between.
    @pytest.mark.parametrize("shape", [(5, 1), (3, 33), (7, 1000), (2, 3, 129), (2, 4096), (2, 4099), (2, 8192), (3, 16384),
                                       (2, 16385), (2, 65536), (2, 65537)], ids=str)
    def test_backward_op_matches_the_exact_gradients(self, device, dtype, shape):
        """Every gradient of the generated backward, the weights' included, within its error bound of the exact one."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        args, grad = self.backward_args(shape, dtype, device, seed=31)
        grads = self.op.backward(grad, *args, [True] * len(args))
        assert len(grads) == len(args)
        self.assert_gradients_match(grads, grad, args)

    @pytest.mark.parametrize("shape", [(20000, 64), (1500, 4100), (700, 16400), (5000, 16400)], ids=str)
    def test_backward_op_weight_gradients_over_many_rows(self, device, dtype, shape):
        """More rows than the GPU has row slots, so that each slot adds up the weights' contributions of
        several rows (the register kernel; at 16400, longer than one block holds, the cluster build on a
        Hopper GPU, each block summing its own columns, or the multi-pass kernel, which adds up groups of 8
        rows: 5000 rows give a slot of an H100's 528 one full group and a part of another)."""
        self._needs_backward()
        self._needs_a_weight()
        self._needs_a_wider_reference(dtype)
        if device == "cpu" and shape[-1] > 64:
            pytest.skip("the GPU's row slots: on CPU, (20000, 64) already spans many tasks")
        args, grad = self.backward_args(shape, dtype, device, seed=41)
        self.assert_gradients_match(self.op.backward(grad, *args, [True] * len(args)), grad, args)

    @pytest.mark.parametrize("shape", [(300, 4096), (200, 16384)], ids=str)
    def test_backward_op_many_aligned_rows(self, device, dtype, shape):
        """More rows of whole 16-byte vectors than the GPU holds programs of a row's kernel, so that where one
        program fills an SM, each program takes several rows, its next row copied in while it computes the one
        before (the Triton backward's pipelined launch); every gradient within its bound."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        if device == "cpu":
            pytest.skip("the GPU's programs: on CPU, the rows are split among tasks, not programs")
        args, grad = self.backward_args(shape, dtype, device, seed=44)
        self.assert_gradients_match(self.op.backward(grad, *args, [True] * len(args)), grad, args)

    @pytest.mark.parametrize("shape", [(0, 7), (3, 0), (2, 0, 5)], ids=str)
    def test_backward_op_empty(self, device, shape):
        """No rows, or empty rows: gradients of the arguments' shapes, and a weight's is zero (a sum over no rows)."""
        self._needs_backward()
        args, grad = self.backward_args(shape, self.op.dtypes[0], device, seed=42)
        grads = self.op.backward(grad, *args, [True] * len(args))
        for got, arg in zip(grads, args, strict=True):
            assert got.shape == arg.shape and got.dtype == arg.dtype
        for got in grads[len(self.op.inputs):]:
            assert torch.equal(got, torch.zeros_like(got))

    @pytest.mark.parametrize("shape", [(37, 1000), (5, 65537)])
    def test_backward_op_returns_the_gradients_asked_for(self, device, shape):
        """ctx.needs_input_grad: each subset of the inputs and weights gets exactly its gradients, in order,
        bitwise equal to those of a call that asks for all; at a short row and at a long one, whose kernels
        compute the gradients asked for in other passes."""
        self._needs_backward()
        args, grad = self.backward_args(shape, self.op.dtypes[0], device, seed=33)
        every = self.op.backward(grad, *args, [True] * len(args))
        for mask in range(2 ** len(args)):
            needs = [bool(mask >> j & 1) for j in range(len(args))]
            got = self.op.backward(grad, *args, needs)
            assert len(got) == sum(needs)
            for g, want in zip(got, [e for e, need in zip(every, needs) if need]):
                assert torch.equal(g, want)

    @pytest.mark.parametrize("cols", [1000, 65537])
    def test_backward_op_bitwise_deterministic(self, device, dtype, cols):
        """The weights' gradients are sums over the rows in a fixed order (no atomics): the same bits every call."""
        self._needs_backward()
        args, grad = self.backward_args((300, cols), dtype, device, seed=43)
        first = self.op.backward(grad, *args, [True] * len(args))
        for _ in range(3):
            again = self.op.backward(grad, *args, [True] * len(args))
            assert all(torch.equal(a, b) for a, b in zip(again, first))

    def test_backward_through_autograd_with_a_non_contiguous_grad(self, device, dtype):
        """autograd calls the generated backward: transposed inputs, a non-contiguous output gradient and
        arguments that do not all require grad still give the exact gradients within their bounds."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        n_inputs = len(self.op.inputs)
        base = self.make_args((130, 67), dtype, device, seed=35)
        args = [t.t() for t in base[:n_inputs]] + self.make_args((67, 130), dtype, device, seed=35)[n_inputs:]
        # the first input and the last argument require grad (all of them when there are two or fewer)
        leaves = [t.detach().requires_grad_(j == 0 or j == len(args) - 1) for j, t in enumerate(args)]
        grad = self.make_args((130, 67), dtype, device, seed=36)[0].t()
        assert not grad.is_contiguous() and not leaves[0].is_contiguous()
        out = self.op.call(*leaves)
        wanted = [t for t in leaves if t.requires_grad]
        got = torch.autograd.grad(out, wanted, grad)
        expected = self.exact_gradients(grad, [t.detach() for t in leaves])
        for g, (want, allowed_err) in zip(got, [e for e, t in zip(expected, leaves) if t.requires_grad], strict=True):
            mismatches = Mismatches(g)
            mismatches.check_piece(g.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
            mismatches.check()

    def test_backward_op_opcheck(self, device):
        self._needs_backward()
        args, grad = self.backward_args((5, 9), self.op.dtypes[0], device, seed=37)
        torch.library.opcheck(self.op.backward, (grad, *args, [True] * len(args)))

    def test_backward_op_error_wrong_grad_shape(self, device):
        self._needs_backward()
        args, _ = self.backward_args((4, 6), self.op.dtypes[0], device, seed=39)
        grad = self.make_args((6, 4), self.op.dtypes[0], device, seed=40)[0]
        with pytest.raises(RuntimeError, match=re.escape(f"{self.op.name}_backward: grad is ")):
            self.op.backward(grad, *args, [True] * len(args))

    @pytest.mark.parametrize("requires_grad", [False, True])
    def test_opcheck(self, device, requires_grad):
        # Checks the schema, the fake implementation, the autograd registration and the op's
        # behaviour under torch.compile's tracing (it does not check gradient values: gradcheck does).
        args = [t.requires_grad_(requires_grad) for t in self.make_args((5, 9), self.op.dtypes[0], device, seed=11)]
        torch.library.opcheck(self.op.overload, args)

    def test_torch_compile_fullgraph(self, device):
        torch._dynamo.reset()
        with without_compile_caches():
            dtype = self.op.dtypes[0]
            args = [t.requires_grad_() for t in self.make_args((6, 100), dtype, device, seed=12)]

            def f(*ts):
                return self.op.call(*ts) * 2

            compiled = torch.compile(f, fullgraph=True)
            out = compiled(*args)
            # Each result against eager's and the exact one (reference() in float64 on the same values)
            leaves = [t.detach().double().requires_grad_() for t in args]
            exact = self.op.reference(*leaves) * 2
            eager = f(*args)
            assert_as_close_as_eager(out, eager, exact, **TOLERANCES[dtype])
            grads = torch.autograd.grad(out.sum(), args)
            want = torch.autograd.grad(eager.sum(), args)
            exact_grads = torch.autograd.grad(exact.sum(), leaves, allow_unused=True)
            for got, ref, ideal in zip(grads, want, exact_grads, strict=True):
                assert_as_close_as_eager(got, ref, torch.zeros_like(ref) if ideal is None else ideal, **TOLERANCES[dtype])

    @pytest.mark.parametrize("cols", [1000, 4099, 65536, 65537])
    def test_bitwise_deterministic(self, device, dtype, cols):
        args = self.make_args((64, cols), dtype, device, seed=13)
        first = self.op.call(*args)
        for _ in range(3):
            assert torch.equal(self.op.call(*args), first)

    # ---- bad arguments: one clear message each ----

    def test_error_unsupported_dtype(self, device):
        args = [torch.ones(2, 4, dtype=torch.int32, device=device) for _ in self.op.inputs]
        args += [torch.ones(4, dtype=torch.int32, device=device) for _ in self.op.weights]
        int32 = "torch.int32" if self.op.backend == "triton" else "Int"
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[0]} has dtype {int32}, but {self.op.name} supports")):
            self.op.call(*args)

    def test_error_zero_dimensional(self, device):
        n_inputs = len(self.op.inputs)
        args = self.make_args((4,), self.op.dtypes[0], device)
        args[:n_inputs] = [t[0] for t in args[:n_inputs]]
        first = self.op.inputs[0]
        with pytest.raises(RuntimeError, match=self.op.message(rf"{first} .*0-dimensional|{first} needs at least one dimension")):
            self.op.call(*args)

    def test_error_shape_mismatch(self, device):
        n_inputs = len(self.op.inputs)
        if n_inputs < 2:
            pytest.skip(f"{self.op.name} has a single input")
        args = self.make_args((2, 8), self.op.dtypes[0], device)
        args[n_inputs - 1] = self.make_args((3, 8), self.op.dtypes[0], device)[0]
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[-1]} has shape \[3, 8\] but {self.op.inputs[0]} has shape \[2, 8\]")):
            self.op.call(*args)

    def _needs_a_weight(self):
        if not self.op.weights:
            pytest.skip(f"{self.op.name} has no weights")

    @pytest.mark.parametrize("shape", [(9,), (8, 1), (1, 8)], ids=str)
    def test_error_weight_shape(self, device, shape):
        self._needs_a_weight()
        args = self.make_args((2, 8), self.op.dtypes[0], device)
        args[-1] = self.make_args(shape, self.op.dtypes[0], device)[0]
        with pytest.raises(RuntimeError, match=self.op.message(rf"weight {self.op.weights[-1]} has shape .* but must be")):
            self.op.call(*args)

    def test_error_weight_dtype(self, device):
        self._needs_a_weight()
        if len(self.op.dtypes) < 2:
            pytest.skip(f"{self.op.name} supports a single dtype")
        args = self.make_args((2, 8), self.op.dtypes[0], device)
        args[-1] = args[-1].to(self.op.dtypes[1])
        with pytest.raises(RuntimeError, match=self.op.message(rf"weight {self.op.weights[-1]} has dtype .* but {self.op.inputs[0]} has dtype")):
            self.op.call(*args)

    @requires_cuda
    def test_error_weight_device(self):
        self._needs_a_weight()
        args = self.make_args((2, 8), self.op.dtypes[0], "cuda")
        args[-1] = args[-1].cpu()
        with pytest.raises(RuntimeError, match=self.op.message(rf"weight {self.op.weights[-1]} is on cpu but {self.op.inputs[0]} is on cuda")):
            self.op.call(*args)

    def test_error_sparse_input(self):
        args = self.make_args((2, 8), self.op.dtypes[0], "cpu")
        args[0] = args[0].to_sparse()
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[0]} must be a dense tensor")):
            self.op.call(*args)

    def test_error_not_a_tensor(self):
        args = self.make_args((2, 8), self.op.dtypes[0], "cpu")
        args[-1] = 1.5
        last = (self.op.inputs + self.op.weights)[-1]
        with pytest.raises(TypeError, match=self.op.message(rf"{last} must be a torch.Tensor, got float")):
            self.op.call(*args)

    # ---- CUDA: devices, streams, graphs and sizes ----

    @requires_cuda
    def test_runs_on_the_inputs_device_and_current_stream(self):
        device = f"cuda:{torch.cuda.device_count() - 1}"
        args = self.make_args((512, 1024), self.op.dtypes[0], device, seed=14)
        stream = torch.cuda.Stream(device=device)
        with torch.cuda.device(device), torch.cuda.stream(stream):
            out = self.op.call(*args)
        stream.synchronize()
        assert out.device == torch.device(device)
        self.assert_matches(out, args)

    @requires_cuda
    @pytest.mark.parametrize("cols", [4099, 65536])
    def test_cuda_graph_capture(self, cols):
        # Rows of 65536 take the cluster kernel (cudaLaunchKernelEx) on an H100, captured like any launch.
        args = self.make_args((33, cols), self.op.dtypes[0], "cuda", seed=15)
        self.op.call(*args)  # warm up outside the graph
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.op.call(*args)
        fresh = self.make_args((33, cols), self.op.dtypes[0], "cuda", seed=16)
        for t, u in zip(args, fresh):
            t.copy_(u)
        graph.replay()
        torch.cuda.synchronize()
        self.assert_matches(out, fresh)

    @pytest.mark.large
    @requires_cuda
    def test_more_than_2_pow_31_elements(self):
        # int32 row offsets would overflow here. Rows of 1024 in the smallest supported dtype; the first
        # rows, the rows across element 2**31 and the last rows are checked against the reference.
        n_inputs = len(self.op.inputs)
        dtype = min(self.op.dtypes, key=lambda d: d.itemsize)
        cols = 1024
        rows = 2**31 // cols + 3
        need = (n_inputs + 1) * rows * cols * dtype.itemsize
        free, _ = torch.cuda.mem_get_info()
        if free < need * 1.1:
            pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
        generator = seeded(17, "cuda")
        # Drawn in the dtype itself: a float64 draw of this size would need 16 GiB more than `need`.
        args = [torch.empty((rows, cols), dtype=dtype, device="cuda") for _ in range(n_inputs)]
        for tensor in args:
            if self.op.positive_domain:
                tensor.uniform_(0.5, 2.5, generator=generator)
            else:
                tensor.normal_(generator=generator)
        args += [self.sample((cols,), dtype, "cuda", generator) for _ in self.op.weights]
        out = self.op.call(*args)
        boundary = 2**31 // cols
        for start, stop in [(0, 4), (boundary - 2, boundary + 2), (rows - 4, rows)]:
            window = [t[start:stop] for t in args[:n_inputs]] + args[n_inputs:]
            self.assert_matches(out[start:stop], window)

    @pytest.mark.large
    @requires_cuda
    def test_backward_op_more_than_2_pow_31_elements(self):
        # The backward kernel's row offsets past 2**31: rows of 1024 in the smallest supported dtype, every
        # input's gradient checked within its bound on the first rows, across element 2**31 and on the last
        # rows (the weights' gradients sum over all rows: their bound is checked in the tests above).
        self._needs_backward()
        n_inputs = len(self.op.inputs)
        dtype = min(self.op.dtypes, key=lambda d: d.itemsize)
        cols = 1024
        rows = 2**31 // cols + 3
        need = (2 * n_inputs + 1) * rows * cols * dtype.itemsize
        free, _ = torch.cuda.mem_get_info()
        if free < need * 1.1:
            pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
        generator = seeded(18, "cuda")
        args = [torch.empty((rows, cols), dtype=dtype, device="cuda") for _ in range(n_inputs + 1)]
        for tensor in args:
            if self.op.positive_domain:
                tensor.uniform_(0.5, 2.5, generator=generator)
            else:
                tensor.normal_(generator=generator)
        grad, args = args[0], args[1:]
        args += [self.sample((cols,), dtype, "cuda", generator) for _ in self.op.weights]
        grads = self.op.backward(grad, *args, [True] * n_inputs + [False] * len(self.op.weights))
        boundary = 2**31 // cols
        for start, stop in [(0, 4), (boundary - 2, boundary + 2), (rows - 4, rows)]:
            window = [t[start:stop] for t in args[:n_inputs]] + args[n_inputs:]
            expected = self.exact_gradients(grad[start:stop], window)[:n_inputs]
            for got, (want, allowed_err) in zip(grads, expected, strict=True):
                mismatches = Mismatches(got[start:stop])
                mismatches.check_piece(got[start:stop].reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
                mismatches.check()
