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
from pathlib import Path

import pytest
import torch

from .suite import Mismatches, OpUnderTest, Suite, requires_cuda, seeded, without_compile_caches

__all__ = ["HopperPathChecks", "MatmulOp", "MatmulSuite"]

# (M, K, N): ragged sizes that are not multiples of any tile, degenerate ones, tile-aligned ones,
# and ones with K and N multiples of 8 (the tensor-core kernel's 16-byte load path) but ragged M.
SHAPES = [(1, 1, 1), (17, 33, 65), (127, 129, 255), (1, 4096, 1), (4096, 1, 4096), (128, 64, 256),
          (130, 72, 136), (300, 40, 24)]


@dataclasses.dataclass(frozen=True)
class MatmulOp(OpUnderTest):
    """A matmul op: whether it takes a bias and whether it has an epilogue (``fused``)."""

    bias: bool = False
    fused: bool = False


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
        then the epilogue's rounding (the error model)."""
        error_model = self.op.error_model(a.dtype)
        a64, b64 = a.double(), b.double()
        bias = (self.bias_for(b).double(),) if self.op.bias else ()
        want = self.op.reference(a64, b64, *bias)
        acc = torch.matmul(a64, b64)
        acc_error = error_model.dot_error(a64, b64)
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
            torch.testing.assert_close(out, f(*inputs))
            grads = torch.autograd.grad(out.sum(), inputs)
            want = torch.autograd.grad(f(*inputs).sum(), inputs)
            for got, ref in zip(grads, want):
                torch.testing.assert_close(got, ref)

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
        kernels = cuda_kernels(lambda: self.run(a, b))
        if not kernels:  # every call launches a kernel, so an empty list means the profiler is blind
            pytest.skip("the profiler saw no CUDA kernel (CUPTI is held by another tool, such as compute-sanitizer): "
                        "which kernel ran is unchecked")
        assert any("cutlass" in name for name in kernels) == takes_cutlass, sorted(kernels)
