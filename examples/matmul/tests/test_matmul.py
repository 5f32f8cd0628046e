"""Tests of matmul::matmul (C = A @ B) on CPU and CUDA, for every dtype it supports.

Run: pytest -q. CUDA tests skip, with the reason, when no GPU is visible or the extension was built
without CUDA.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

import matmul
from matmul.ops.matmul import reference

OP = torch.ops.matmul.matmul.default
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# Tolerances against a float64 product of the same (rounded) inputs. Entries of A @ B grow like
# sqrt(K) for random inputs, and so does the accumulated rounding error, hence atol scales with
# sqrt(K). float16/bfloat16 are dominated by the final rounding of C to 11 / 8 significant bits.
TOLERANCES = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def run(a, b):
    """The op under test."""
    return matmul.matmul(a, b)


def assert_matches(out, a, b):
    expected = torch.matmul(a.double(), b.double())
    rtol, atol = TOLERANCES[a.dtype]
    k = a.shape[-1]
    torch.testing.assert_close(out.double(), expected.to(a.dtype).double(), rtol=rtol, atol=atol * math.sqrt(max(k, 1)))


def make(shape, dtype, device, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not matmul.WITH_CUDA:
        return "matmul was built without CUDA (no toolkit at build time)"
    return None


requires_cuda = pytest.mark.skipif(_cuda_skip_reason() is not None, reason=_cuda_skip_reason() or "")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
# (M, K, N): ragged sizes that are not multiples of any tile, degenerate ones, tile-aligned ones,
# and ones with K and N multiples of 8 (the tensor-core kernel's 16-byte load path) but ragged M.
SHAPES = [(1, 1, 1), (17, 33, 65), (127, 129, 255), (1, 4096, 1), (4096, 1, 4096), (128, 64, 256),
          (130, 72, 136), (300, 40, 24)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_reference(device, dtype, mkn):
    m, k, n = mkn
    a, b = make((m, k), dtype, device, 0), make((k, n), dtype, device, 1)
    out = run(a, b)
    assert out.shape == (m, n) and out.dtype == dtype and out.is_contiguous()
    assert torch.isfinite(out).all()  # every element written (the allocation is uninitialized)
    assert_matches(out, a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batched(device, dtype):
    a, b = make((3, 33, 17), dtype, device, 2), make((3, 17, 40), dtype, device, 3)
    out = run(a, b)
    assert out.shape == (3, 33, 40)
    assert_matches(out, a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_cases(device, dtype):
    a0, b0 = make((5, 0), dtype, device, 0), make((0, 7), dtype, device, 0)
    k0 = run(a0, b0)
    assert k0.shape == (5, 7) and torch.equal(k0, torch.zeros(5, 7, dtype=dtype, device=device))
    assert run(make((0, 4), dtype, device, 0), make((4, 7), dtype, device, 0)).shape == (0, 7)
    assert run(make((5, 4), dtype, device, 0), make((4, 0), dtype, device, 0)).shape == (5, 0)
    assert run(make((0, 5, 4), dtype, device, 0), make((0, 4, 3), dtype, device, 0)).shape == (0, 5, 3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["transposed", "sliced", "misaligned"])
def test_non_contiguous_and_misaligned(device, dtype, view):
    if view == "transposed":
        a, b = make((64, 130), dtype, device, 4).t(), make((72, 64), dtype, device, 5).t()
    elif view == "sliced":
        a, b = make((130, 150), dtype, device, 4)[:, ::2], make((75, 90), dtype, device, 5)[:, 3:83]
    else:  # contiguous views whose data starts one element into the storage: not 16-byte aligned
        a = make((130 * 64 + 1,), dtype, device, 4)[1:].view(130, 64)
        b = make((64 * 136 + 1,), dtype, device, 5)[1:].view(64, 136)
    assert_matches(run(a, b), a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    a = make((7, 5), torch.float64, device, 6).requires_grad_()
    b = make((5, 3), torch.float64, device, 7).requires_grad_()
    assert torch.autograd.gradcheck(OP, (a, b))
    a3 = make((2, 4, 5), torch.float64, device, 8).requires_grad_()
    b3 = make((2, 5, 3), torch.float64, device, 9).requires_grad_()
    assert torch.autograd.gradcheck(OP, (a3, b3))
    assert torch.autograd.gradgradcheck(OP, (a, b))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, requires_grad):
    a = make((9, 6), DTYPES[0], device, 10).requires_grad_(requires_grad)
    b = make((6, 11), DTYPES[0], device, 11).requires_grad_(requires_grad)
    torch.library.opcheck(OP, (a, b))
    torch.library.opcheck(OP, (make((2, 3, 4), DTYPES[0], device, 12), make((2, 4, 5), DTYPES[0], device, 13)))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()
    a = make((33, 17), DTYPES[0], device, 14).requires_grad_()
    b = make((17, 9), DTYPES[0], device, 15).requires_grad_()

    inputs = (a, b)

    def f(x, y):
        return matmul.matmul(x, y).relu()

    compiled = torch.compile(f, fullgraph=True)
    out = compiled(*inputs)
    torch.testing.assert_close(out, f(*inputs))
    grads = torch.autograd.grad(out.sum(), inputs)
    want = torch.autograd.grad(f(*inputs).sum(), inputs)
    for got, ref in zip(grads, want):
        torch.testing.assert_close(got, ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bitwise_deterministic(device, dtype):
    a, b = make((257, 300), dtype, device, 16), make((300, 129), dtype, device, 17)
    assert torch.equal(run(a, b), run(a, b))


@pytest.mark.parametrize("device", DEVICES)
def test_error_inner_dimension_mismatch(device):
    with pytest.raises(RuntimeError, match=r"matmul: inner dimensions differ: A \[3, 4\] has 4 columns but B \[5, 6\] has 5 rows"):
        run(make((3, 4), DTYPES[0], device, 0), make((5, 6), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_rank(device):
    with pytest.raises(RuntimeError, match=r"matmul: expected A and B both 2-D .* got A \[3\] and B \[3, 2\]"):
        run(make((3,), DTYPES[0], device, 0), make((3, 2), DTYPES[0], device, 0))
    with pytest.raises(RuntimeError, match=r"got A \[2, 3, 4\] and B \[4, 5\]"):
        run(make((2, 3, 4), DTYPES[0], device, 0), make((4, 5), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_batch_mismatch(device):
    with pytest.raises(RuntimeError, match=r"matmul: batch sizes differ: A \[2, 3, 4\], B \[3, 4, 5\]"):
        run(make((2, 3, 4), DTYPES[0], device, 0), make((3, 4, 5), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_dtypes(device):
    if len(DTYPES) > 1:
        with pytest.raises(RuntimeError, match=r"matmul: B has dtype .* but A has dtype"):
            run(make((3, 4), DTYPES[0], device, 0), make((4, 5), DTYPES[1], device, 0))
    with pytest.raises(RuntimeError, match=r"matmul: A has dtype Int, but matmul supports"):
        run(torch.ones(3, 4, dtype=torch.int32, device=device), torch.ones(4, 5, dtype=torch.int32, device=device))


@requires_cuda
def test_error_device_mismatch():
    with pytest.raises(RuntimeError, match=r"matmul: B is on cpu but A is on cuda"):
        run(make((3, 4), DTYPES[0], "cuda", 0), make((4, 5), DTYPES[0], "cpu", 0))


def test_error_not_a_tensor():
    with pytest.raises(TypeError, match=r"matmul: B must be a torch.Tensor, got list"):
        matmul.matmul(make((3, 4), DTYPES[0], "cpu", 0), [[1.0]])


@requires_cuda
def test_current_stream_and_cuda_graph():
    a, b = make((200, 96), DTYPES[0], "cuda", 18), make((96, 136), DTYPES[0], "cuda", 19)
    run(a, b)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = run(a, b)
    a.copy_(make((200, 96), DTYPES[0], "cuda", 20))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(out, a, b)


def _hopper_path_reason():
    if _cuda_skip_reason() is not None:
        return _cuda_skip_reason()
    if torch.cuda.get_device_capability() != (9, 0):
        return "the CUTLASS path runs on sm_90 GPUs (H100, H200) only"
    info = Path(matmul.__file__).parent / "_build_info.json"
    recorded = json.loads(info.read_text()) if info.is_file() else {}
    if not recorded.get("cutlass_sm90"):
        return recorded.get("cutlass_sm90_left_out") or (
            "matmul was built without the CUTLASS path (no 9.0 target, or KERNELGEN_NO_CUTLASS=1)")
    return None


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


@pytest.mark.skipif(_hopper_path_reason() is not None, reason=_hopper_path_reason() or "")
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d in (torch.float16, torch.bfloat16)], ids=str)
@pytest.mark.parametrize("case", HOPPER_CASES, ids=lambda c: c[0])
def test_hopper_path_and_its_fallback(dtype, case):
    _, a_shape, b_shape, offset, takes_cutlass = case
    a = make((math.prod(a_shape) + offset,), dtype, "cuda", 21)[offset:].view(a_shape)
    b = make((math.prod(b_shape) + offset,), dtype, "cuda", 22)[offset:].view(b_shape)
    assert_matches(run(a, b), a, b)
    # The CUTLASS launch is stream-ordered and allocation-free, so it can be captured in a CUDA graph.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        replayed = run(a, b)
    a.copy_(make(a_shape, dtype, "cuda", 23))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(replayed, a, b)
    kernels = cuda_kernels(lambda: run(a, b))
    if not kernels:  # every call launches a kernel, so an empty list means the profiler is blind
        pytest.skip("the profiler saw no CUDA kernel (CUPTI is held by another tool, such as compute-sanitizer): "
                    "which kernel ran is unchecked")
    assert any("cutlass" in name for name in kernels) == takes_cutlass, sorted(kernels)
