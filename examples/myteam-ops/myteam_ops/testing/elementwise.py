"""The test suite of myteam_ops's elementwise ops, on CPU and CUDA, for every dtype an op supports.

An op's tests/test_<op>.py runs it with ``class TestMyOp(ElementwiseSuite): op = OpUnderTest(...)``.
Run: pytest -q (add -m "not large" to skip the >2**31-element CUDA test). CUDA tests skip, with the
reason, when no GPU is visible or the op has no CUDA implementation here.
"""

from __future__ import annotations

import re

import pytest
import torch

from .suite import Mismatches, OpUnderTest, Suite, assert_as_close_as_eager, requires_cuda, seeded, without_compile_caches

__all__ = ["ElementwiseSuite", "OpUnderTest"]

# Tolerances of the tests that compare PyTorch's arithmetic with itself: the backward (the vjp of
# reference() in op-math precision, in the op and in the test alike) and torch.compile against eager
# calls of the op (there, with the largest error eager makes: assert_as_close_as_eager). The op's own
# results are held to the error model instead.
TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float16: dict(rtol=2e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=8e-3),
}
#: Elements checked at a time: the float64 reference and its bound hold about 20 tensors of this size.
CHUNK = 2**22
SHAPES = [(0,), (1,), (255,), (257,), (1000003,), (33, 65), (3, 17, 31)]


class ElementwiseSuite(Suite):
    """Every test of an elementwise op: results within the error model, views and alignment, autograd,
    opcheck, torch.compile, determinism, the messages for bad arguments, streams, CUDA graphs, a grid
    many times the GPU and more than 2**31 elements."""

    # ---- inputs and the check of a result ----

    def sample(self, shape, dtype, device, generator):
        """Standard normal values (random signs and magnitudes, never all zeros: zeros hide unwritten
        outputs and wrong indexing), or uniform in [0.5, 2.5) for an expression that needs positive
        arguments (a log, a root, a fractional or negative power, a division by an input)."""
        if self.op.positive_domain:
            values = torch.rand(shape, generator=generator, dtype=torch.float64, device=generator.device) * 2 + 0.5
        else:
            values = torch.randn(shape, generator=generator, dtype=torch.float64, device=generator.device)
        return values.to(device=device, dtype=dtype)

    def make_inputs(self, shape, dtype, device, seed=0):
        generator = seeded(seed)
        return [self.sample(shape, dtype, device, generator) for _ in self.op.inputs]

    def expected_and_bound(self, inputs):
        """The exact result (reference() in float64 on the same, already rounded inputs) and the error
        each element of the op may have (the error model)."""
        error_model = self.op.error_model(inputs[0].dtype)
        exact_args = [x.double() for x in inputs]
        want = self.op.reference(*exact_args)
        return want, error_model.allowed_error(want, self.op.error_bound(error_model, *exact_args))

    def assert_matches(self, out, inputs):
        """Asserts that every element of out is within its error bound of the exact result."""
        assert out.shape == inputs[0].shape
        flat_inputs = [x.reshape(-1) for x in inputs]
        got = out.reshape(-1)
        mismatches = Mismatches(out)
        for start in range(0, got.numel(), CHUNK):
            want, allowed_err = self.expected_and_bound([x[start:start + CHUNK] for x in flat_inputs])
            mismatches.check_piece(got[start:start + CHUNK], want, allowed_err, offset=start)
        mismatches.check()

    def sample_args(self, dtype, device):
        """The arguments of one ordinary call (the Triton eager fast path's tests use them)."""
        return self.make_inputs((1000,), dtype, device, seed=21)

    def _needs_two_inputs(self):
        if len(self.op.inputs) < 2:
            pytest.skip(f"{self.op.name} has a single input")

    # ---- results ----

    @pytest.mark.parametrize("shape", SHAPES, ids=str)
    def test_matches_reference(self, device, dtype, shape):
        inputs = self.make_inputs(shape, dtype, device)
        out = self.op.call(*inputs)
        assert out.shape == inputs[0].shape and out.dtype == dtype and out.device == inputs[0].device
        assert out.is_contiguous()
        self.assert_matches(out, inputs)

    @pytest.mark.parametrize("view", ["transposed", "strided_slice", "offset_1", "offset_3"])
    def test_non_contiguous_and_misaligned(self, device, dtype, view):
        # Transposed and strided views exercise the .contiguous() path; offset views such as x[1:]
        # start 1 element into their storage, so their data pointers are not 16-byte aligned and the
        # CUDA kernel must take its scalar path.
        base = self.make_inputs((67, 130), dtype, device, seed=1)
        if view == "transposed":
            inputs = [x.t() for x in base]
        elif view == "strided_slice":
            inputs = [x[:, ::3] for x in base]
        else:
            k = int(view.split("_")[1])
            inputs = [x.flatten()[k:] for x in base]
        self.assert_matches(self.op.call(*inputs), inputs)

    def test_mixed_alignment(self, device):
        # One aligned input next to a misaligned one must still give the right answer.
        self._needs_two_inputs()
        inputs = self.make_inputs((4099,), torch.float32, device, seed=2)
        inputs[-1] = self.make_inputs((4100,), torch.float32, device, seed=3)[0][1:]
        self.assert_matches(self.op.call(*inputs), inputs)

    # ---- autograd and torch.compile ----

    def test_gradcheck(self, device):
        if torch.float64 not in self.op.dtypes:
            pytest.skip(f"float64 is not among {self.op.name}'s dtypes, and gradcheck needs it")
        inputs = [x.requires_grad_() for x in self.make_inputs((4, 7), torch.float64, device, seed=4)]
        assert torch.autograd.gradcheck(self.op.overload, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)

    def test_backward_matches_reference(self, device, dtype):
        if self.op.backward is not None:
            pytest.skip(f"{self.op.name}'s generated backward is held to its error bounds (test_backward_op_*)")
        inputs = [x.requires_grad_() for x in self.make_inputs((513,), dtype, device, seed=5)]
        grad_out = self.make_inputs((513,), dtype, device, seed=6)[0]
        grads = torch.autograd.grad(self.op.call(*inputs), inputs, grad_out)
        opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        leaves = [x.detach().to(opmath).requires_grad_() for x in inputs]
        ref_grads = torch.autograd.grad(self.op.reference(*leaves), leaves, grad_out.to(opmath))
        for got, want in zip(grads, ref_grads):
            torch.testing.assert_close(got, want.to(dtype), **TOLERANCES[dtype])

    # ---- the generated backward (an op with backward=...) ----

    def _needs_backward(self):
        if self.op.backward is None:
            pytest.skip(f"{self.op.name}'s backward is the vjp of its reference")

    @staticmethod
    def _needs_a_wider_reference(dtype):
        # The exact gradients are the vjp of reference() in float64: exact enough for a float32 or 16-bit
        # op, not for a float64 one (autograd's own rounding, in the unsimplified derivative, is as large
        # as the op's). The float64 gradients are checked by test_gradcheck instead.
        if dtype == torch.float64:
            pytest.skip("float64 gradients are checked by gradcheck: the float64 vjp of reference() is no more exact than the op")

    def exact_gradients(self, grad, inputs):
        """The exact gradients (the vjp of reference() in float64 on the same, already rounded values) and
        the error each element of each may have (the error model of the derivatives)."""
        error_model = self.op.error_model(grad.dtype)
        exact = [x.double().requires_grad_() for x in inputs]
        exact_grad = grad.double()
        wants = torch.autograd.grad(self.op.reference(*exact), exact, exact_grad, allow_unused=True)
        wants = [torch.zeros_like(x) if w is None else w for x, w in zip(exact, wants)]
        bounds = self.op.grad_error_bound(error_model, exact_grad, *(x.detach() for x in exact))
        return [(want, error_model.allowed_error(want, bound)) for want, bound in zip(wants, bounds)]

    def assert_gradients_match(self, grads, grad, inputs):
        for got, (want, allowed_err) in zip(grads, self.exact_gradients(grad, inputs)):
            assert got.shape == want.shape and got.dtype == grad.dtype
            mismatches = Mismatches(got)
            mismatches.check_piece(got.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
            mismatches.check()

    @pytest.mark.parametrize("shape", [(0,), (1,), (255,), (1000003,), (33, 65)], ids=str)
    def test_backward_op_matches_the_exact_gradients(self, device, dtype, shape):
        """Every gradient of the generated backward within its error bound of the exact one."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        inputs = self.make_inputs(shape, dtype, device, seed=31)
        grad = self.make_inputs(shape, dtype, device, seed=32)[0]
        grads = self.op.backward(grad, *inputs, [True] * len(inputs))
        assert len(grads) == len(inputs) and all(g.is_contiguous() for g in grads)
        self.assert_gradients_match(grads, grad, inputs)

    def test_backward_op_returns_the_gradients_asked_for(self, device):
        """ctx.needs_input_grad: each subset of the inputs gets exactly its gradients, in order."""
        self._needs_backward()
        inputs = self.make_inputs((1000,), self.op.dtypes[0], device, seed=33)
        grad = self.make_inputs((1000,), self.op.dtypes[0], device, seed=34)[0]
        every = self.op.backward(grad, *inputs, [True] * len(inputs))
        for mask in range(2 ** len(inputs)):
            needs = [bool(mask >> j & 1) for j in range(len(inputs))]
            got = self.op.backward(grad, *inputs, needs)
            assert len(got) == sum(needs)
            for g, want in zip(got, [e for e, need in zip(every, needs) if need]):
                assert torch.equal(g, want)

    def test_backward_through_autograd_with_a_non_contiguous_grad(self, device, dtype):
        """autograd calls the generated backward: a transposed output gradient and inputs that do not all
        require grad still give the exact gradients within their bounds."""
        self._needs_backward()
        self._needs_a_wider_reference(dtype)
        base = self.make_inputs((67, 130), dtype, device, seed=35)
        inputs = [x.t() for x in base]
        leaves = [x.detach().requires_grad_(j == 0 or len(inputs) == 1) for j, x in enumerate(inputs)]
        grad = self.make_inputs((130, 67), dtype, device, seed=36)[0].t().contiguous().t()
        assert not grad.is_contiguous()
        out = self.op.call(*leaves)
        wanted = [x for x in leaves if x.requires_grad]
        got = torch.autograd.grad(out, wanted, grad)
        expected = self.exact_gradients(grad, [x.detach() for x in leaves])
        for g, leaf, (want, allowed_err) in zip(got, wanted, [e for e, x in zip(expected, leaves) if x.requires_grad]):
            mismatches = Mismatches(g)
            mismatches.check_piece(g.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
            mismatches.check()

    def test_backward_op_opcheck(self, device):
        self._needs_backward()
        inputs = self.make_inputs((5, 9), self.op.dtypes[0], device, seed=37)
        grad = self.make_inputs((5, 9), self.op.dtypes[0], device, seed=38)[0]
        torch.library.opcheck(self.op.backward, (grad, *inputs, [True] * len(inputs)))

    def test_backward_op_error_wrong_grad_shape(self, device):
        self._needs_backward()
        inputs = self.make_inputs((4, 5), self.op.dtypes[0], device, seed=39)
        grad = self.make_inputs((5, 4), self.op.dtypes[0], device, seed=40)[0]
        with pytest.raises(RuntimeError, match=re.escape(f"{self.op.name}_backward: grad is ")):
            self.op.backward(grad, *inputs, [True] * len(inputs))

    @pytest.mark.parametrize("requires_grad", [False, True])
    def test_opcheck(self, device, requires_grad):
        # Checks the schema, the fake implementation, the autograd registration and the op's
        # behaviour under torch.compile's tracing (it does not check gradient values: gradcheck does).
        inputs = [x.requires_grad_(requires_grad) for x in self.make_inputs((5, 9), self.op.dtypes[0], device, seed=7)]
        torch.library.opcheck(self.op.overload, inputs)

    def test_torch_compile_fullgraph(self, device):
        torch._dynamo.reset()
        with without_compile_caches():
            dtype = self.op.dtypes[0]
            inputs = [x.requires_grad_() for x in self.make_inputs((1000,), dtype, device, seed=8)]

            def f(*xs):
                return self.op.call(*xs) * 2

            compiled = torch.compile(f, fullgraph=True)
            out = compiled(*inputs)
            # Each result against eager's and the exact one (reference() in float64 on the same values)
            leaves = [x.detach().double().requires_grad_() for x in inputs]
            exact = self.op.reference(*leaves) * 2
            eager = f(*inputs)
            assert_as_close_as_eager(out, eager, exact, **TOLERANCES[dtype])
            grads = torch.autograd.grad(out.sum(), inputs)
            want = torch.autograd.grad(eager.sum(), inputs)
            exact_grads = torch.autograd.grad(exact.sum(), leaves, allow_unused=True)
            for got, ref, ideal in zip(grads, want, exact_grads, strict=True):
                assert_as_close_as_eager(got, ref, torch.zeros_like(ref) if ideal is None else ideal, **TOLERANCES[dtype])

    def test_bitwise_deterministic(self, device, dtype):
        inputs = self.make_inputs((1000003,), dtype, device, seed=9)
        assert torch.equal(self.op.call(*inputs), self.op.call(*inputs))

    # ---- bad arguments: one clear message each ----

    def test_error_unsupported_dtype(self, device):
        inputs = [torch.ones(4, dtype=torch.int32, device=device) for _ in self.op.inputs]
        int32 = "torch.int32" if self.op.backend == "triton" else "Int"
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[0]} has dtype {int32}, but {self.op.name} supports")):
            self.op.call(*inputs)

    def test_error_shape_mismatch(self, device):
        self._needs_two_inputs()
        first, last = self.op.inputs[0], self.op.inputs[-1]
        inputs = self.make_inputs((8,), self.op.dtypes[0], device)
        inputs[-1] = self.make_inputs((9,), self.op.dtypes[0], device)[0]
        with pytest.raises(RuntimeError, match=self.op.message(rf"{last} has shape \[9\] but {first} has shape \[8\]")):
            self.op.call(*inputs)

    def test_error_no_broadcasting(self, device):
        self._needs_two_inputs()
        inputs = self.make_inputs((4, 8), self.op.dtypes[0], device)
        inputs[-1] = inputs[-1][:1]
        with pytest.raises(RuntimeError, match=rf"{self.op.inputs[-1]} has shape \[1, 8\].*no broadcasting"):
            self.op.call(*inputs)

    def test_error_dtype_mismatch(self, device):
        self._needs_two_inputs()
        if len(self.op.dtypes) < 2:
            pytest.skip(f"{self.op.name} supports a single dtype")
        inputs = self.make_inputs((8,), self.op.dtypes[0], device)
        inputs[-1] = inputs[-1].to(self.op.dtypes[1])
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[-1]} has dtype .* but {self.op.inputs[0]} has dtype")):
            self.op.call(*inputs)

    @requires_cuda
    def test_error_device_mismatch(self):
        self._needs_two_inputs()
        inputs = self.make_inputs((8,), self.op.dtypes[0], "cuda")
        inputs[-1] = inputs[-1].cpu()
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[-1]} is on cpu but {self.op.inputs[0]} is on cuda")):
            self.op.call(*inputs)

    def test_error_sparse_input(self):
        inputs = self.make_inputs((8,), self.op.dtypes[0], "cpu")
        inputs[0] = inputs[0].to_sparse()
        with pytest.raises(RuntimeError, match=self.op.message(rf"{self.op.inputs[0]} must be a dense tensor")):
            self.op.call(*inputs)

    def test_error_not_a_tensor(self):
        inputs = self.make_inputs((8,), self.op.dtypes[0], "cpu")
        inputs[-1] = 1.5
        with pytest.raises(TypeError, match=self.op.message(rf"{self.op.inputs[-1]} must be a torch.Tensor, got float")):
            self.op.call(*inputs)

    def test_error_wrong_argument_count(self):
        with pytest.raises(TypeError):
            self.op.call(*self.make_inputs((8,), self.op.dtypes[0], "cpu")[:-1])

    # ---- CUDA: devices, streams, graphs and sizes ----

    @requires_cuda
    def test_runs_on_the_inputs_device_and_current_stream(self):
        # The op must follow its inputs' device (CUDAGuard) and the caller's current stream.
        device = f"cuda:{torch.cuda.device_count() - 1}"
        inputs = self.make_inputs((1 << 20,), self.op.dtypes[0], device, seed=10)
        stream = torch.cuda.Stream(device=device)
        with torch.cuda.device(device), torch.cuda.stream(stream):
            out = self.op.call(*inputs)
        stream.synchronize()
        assert out.device == torch.device(device)
        self.assert_matches(out, inputs)

    @requires_cuda
    def test_cuda_graph_capture(self):
        # Kernels launched on the legacy default stream would break capture; ours use the current stream.
        inputs = self.make_inputs((4097,), self.op.dtypes[0], "cuda", seed=11)
        self.op.call(*inputs)  # warm up outside the graph
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.op.call(*inputs)
        fresh = self.make_inputs((4097,), self.op.dtypes[0], "cuda", seed=12)
        for x, y in zip(inputs, fresh):
            x.copy_(y)
        graph.replay()
        torch.cuda.synchronize()
        self.assert_matches(out, fresh)

    @requires_cuda
    @pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "offset_1"])
    def test_tensor_many_times_the_gpu(self, dtype, offset):
        # With 2**26 + 5 elements the grid is many times what the GPU holds at once, so the kernel
        # switches to several packs per thread (and, at offset 1, to its scalar path), ending in a
        # ragged last block and a tail of n % 16 elements. Smaller shapes never reach that code.
        n = 2**26 + 5
        generator = seeded(5, "cuda")
        inputs = [self.sample((n + offset,), dtype, "cuda", generator)[offset:] for _ in self.op.inputs]
        self.assert_matches(self.op.call(*inputs), inputs)

    #: More elements than an int32 index reaches, and the windows the large tests check: the head, across
    #: the 2**31 boundary, and the tail.
    LARGE_N = 2**31 + 2**20 + 3
    LARGE_WINDOWS = [(0, 4096), (2**31 - 4096, 2**31 + 4096), (LARGE_N - 4096, LARGE_N)]

    def large_inputs(self, dtype, arrays):
        """The op's inputs with LARGE_N elements each, or a skip if the GPU cannot hold ``arrays`` of them."""
        need = arrays * self.LARGE_N * dtype.itemsize
        free, _ = torch.cuda.mem_get_info()
        if free < need * 1.1:
            pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
        inputs = []
        for i in range(len(self.op.inputs)):
            generator = seeded(i, "cuda")
            if self.op.positive_domain:
                inputs.append(torch.empty(self.LARGE_N, dtype=dtype, device="cuda").uniform_(0.5, 2.5, generator=generator))
            else:
                inputs.append(torch.empty(self.LARGE_N, dtype=dtype, device="cuda").normal_(generator=generator))
        return inputs

    @pytest.mark.large
    @requires_cuda
    def test_more_than_2_pow_31_elements(self):
        # int32 indexing would overflow here. Uses the smallest supported dtype, and checks the head,
        # a window across the 2**31 boundary and the tail against the reference.
        dtype = min(self.op.dtypes, key=lambda d: d.itemsize)
        inputs = self.large_inputs(dtype, len(self.op.inputs) + 1)
        out = self.op.call(*inputs)
        for start, stop in self.LARGE_WINDOWS:
            self.assert_matches(out[start:stop], [x[start:stop] for x in inputs])

    @pytest.mark.large
    @requires_cuda
    def test_backward_op_more_than_2_pow_31_elements(self):
        # The backward kernel's indexing past 2**31: every gradient within its bound in the same windows.
        self._needs_backward()
        dtype = min(self.op.dtypes, key=lambda d: d.itemsize)
        self._needs_a_wider_reference(dtype)
        inputs = self.large_inputs(dtype, 2 * len(self.op.inputs) + 1)  # the inputs, grad and the gradients
        grad = torch.empty(self.LARGE_N, dtype=dtype, device="cuda").normal_(generator=seeded(len(inputs), "cuda"))
        grads = self.op.backward(grad, *inputs, [True] * len(inputs))
        for start, stop in self.LARGE_WINDOWS:
            self.assert_gradients_match([g[start:stop] for g in grads], grad[start:stop], [x[start:stop] for x in inputs])
