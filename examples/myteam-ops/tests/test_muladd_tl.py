"""Tests of myteam::muladd_tl (Triton backend) on CPU and CUDA, for every dtype it supports.

Run: pytest -q                      (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or triton is not installed.
"""

from __future__ import annotations

import importlib

import pytest
import torch

import myteam_ops
from myteam_ops.ops.muladd_tl import TRITON_AVAILABLE, reference

OP = torch.ops.myteam.muladd_tl.default
N_INPUTS = 3
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# Tolerances against the reference, which is evaluated in op-math precision (float32 for the half
# types, as the kernels do) and rounded once. What remains is rounding of the final result and
# ulp-level differences between math libraries (CUDA's, glibc's and PyTorch's vectorized ones).
TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float16: dict(rtol=2e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=8e-3),
}

# Inputs are standard normal: random signs and magnitudes, never all zeros (zeros hide
# unwritten outputs and wrong indexing).
def _sample(shape, dtype, device, generator):
    return torch.randn(shape, generator=generator, dtype=torch.float64, device=generator.device).to(device=device, dtype=dtype)


def make_inputs(shape, dtype, device, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [_sample(shape, dtype, device, generator) for _ in range(N_INPUTS)]


def expected(inputs):
    """The reference, computed in op-math precision and rounded once to the inputs' dtype."""
    dtype = inputs[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    return reference(*(x.to(opmath) for x in inputs)).to(dtype)


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not TRITON_AVAILABLE:
        return "triton is not installed, so muladd_tl has no CUDA implementation"
    return None


requires_cuda = pytest.mark.skipif(_cuda_skip_reason() is not None, reason=_cuda_skip_reason() or "")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
SHAPES = [(0,), (1,), (255,), (257,), (1000003,), (33, 65), (3, 17, 31)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_reference(device, dtype, shape):
    inputs = make_inputs(shape, dtype, device)
    out = myteam_ops.muladd_tl(*inputs)
    assert out.shape == inputs[0].shape and out.dtype == dtype and out.device == inputs[0].device
    assert out.is_contiguous()
    torch.testing.assert_close(out, expected(inputs), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["transposed", "strided_slice", "offset_1", "offset_3"])
def test_non_contiguous_and_misaligned(device, dtype, view):
    # Transposed and strided views exercise the .contiguous() path; offset views such as x[1:]
    # start 1 element into their storage, so their data pointers are not 16-byte aligned and the
    # CUDA kernel must take its scalar path.
    base = make_inputs((67, 130), dtype, device, seed=1)
    if view == "transposed":
        inputs = [x.t() for x in base]
    elif view == "strided_slice":
        inputs = [x[:, ::3] for x in base]
    else:
        k = int(view.split("_")[1])
        inputs = [x.flatten()[k:] for x in base]
    out = myteam_ops.muladd_tl(*inputs)
    torch.testing.assert_close(out, expected([x.contiguous() for x in inputs]), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_alignment(device):
    # One aligned input next to a misaligned one must still give the right answer.
    inputs = make_inputs((4099,), torch.float32, device, seed=2)
    inputs[-1] = make_inputs((4100,), torch.float32, device, seed=3)[0][1:]
    out = myteam_ops.muladd_tl(*inputs)
    torch.testing.assert_close(out, expected(inputs), **TOLERANCES[torch.float32])


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    inputs = [x.requires_grad_() for x in make_inputs((4, 7), torch.float64, device, seed=4)]
    assert torch.autograd.gradcheck(OP, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward_matches_reference(device, dtype):
    inputs = [x.requires_grad_() for x in make_inputs((513,), dtype, device, seed=5)]
    grad_out = make_inputs((513,), dtype, device, seed=6)[0]
    grads = torch.autograd.grad(myteam_ops.muladd_tl(*inputs), inputs, grad_out)
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    leaves = [x.detach().to(opmath).requires_grad_() for x in inputs]
    ref_grads = torch.autograd.grad(reference(*leaves), leaves, grad_out.to(opmath))
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want.to(dtype), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, requires_grad):
    # Checks the schema, the fake implementation, the autograd registration and the op's
    # behaviour under torch.compile's tracing (it does not check gradient values: gradcheck does).
    inputs = [x.requires_grad_(requires_grad) for x in make_inputs((5, 9), DTYPES[0], device, seed=7)]
    torch.library.opcheck(OP, inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()
    inputs = [x.requires_grad_() for x in make_inputs((1000,), DTYPES[0], device, seed=8)]

    def f(*xs):
        return myteam_ops.muladd_tl(*xs) * 2

    compiled = torch.compile(f, fullgraph=True)
    out = compiled(*inputs)
    torch.testing.assert_close(out, f(*inputs), **TOLERANCES[DTYPES[0]])
    grads = torch.autograd.grad(out.sum(), inputs)
    want = torch.autograd.grad(f(*inputs).sum(), inputs)
    for got, ref in zip(grads, want):
        torch.testing.assert_close(got, ref, **TOLERANCES[DTYPES[0]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bitwise_deterministic(device, dtype):
    inputs = make_inputs((1000003,), dtype, device, seed=9)
    first = myteam_ops.muladd_tl(*inputs)
    second = myteam_ops.muladd_tl(*inputs)
    assert torch.equal(first, second)


@pytest.mark.parametrize("device", DEVICES)
def test_error_unsupported_dtype(device):
    inputs = [torch.ones(4, dtype=torch.int32, device=device) for _ in range(N_INPUTS)]
    with pytest.raises(RuntimeError, match=r"muladd_tl: a has dtype torch.int32, but muladd_tl supports"):
        myteam_ops.muladd_tl(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_shape_mismatch(device):
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[-1] = make_inputs((9,), DTYPES[0], device)[0]
    with pytest.raises(RuntimeError, match=r"muladd_tl: c has shape \[9\] but a has shape \[8\]"):
        myteam_ops.muladd_tl(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_no_broadcasting(device):
    inputs = make_inputs((4, 8), DTYPES[0], device)
    inputs[-1] = inputs[-1][:1]
    with pytest.raises(RuntimeError, match=r"c has shape \[1, 8\].*no broadcasting"):
        myteam_ops.muladd_tl(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_dtype_mismatch(device):
    if len(DTYPES) < 2:
        pytest.skip("muladd_tl supports a single dtype")
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[-1] = inputs[-1].to(DTYPES[1])
    with pytest.raises(RuntimeError, match=r"muladd_tl: c has dtype .* but a has dtype"):
        myteam_ops.muladd_tl(*inputs)


@requires_cuda
def test_error_device_mismatch():
    inputs = make_inputs((8,), DTYPES[0], "cuda")
    inputs[-1] = inputs[-1].cpu()
    with pytest.raises(RuntimeError, match=r"muladd_tl: c is on cpu but a is on cuda"):
        myteam_ops.muladd_tl(*inputs)


def test_error_sparse_input():
    inputs = make_inputs((8,), DTYPES[0], "cpu")
    inputs[0] = inputs[0].to_sparse()
    with pytest.raises(RuntimeError, match=r"muladd_tl: a must be a dense tensor"):
        myteam_ops.muladd_tl(*inputs)


def test_error_not_a_tensor():
    inputs = make_inputs((8,), DTYPES[0], "cpu")
    inputs[-1] = 1.5
    with pytest.raises(TypeError, match=r"muladd_tl: c must be a torch.Tensor, got float"):
        myteam_ops.muladd_tl(*inputs)


def test_error_wrong_argument_count():
    with pytest.raises(TypeError):
        myteam_ops.muladd_tl(*make_inputs((8,), DTYPES[0], "cpu")[:-1])


@requires_cuda
def test_runs_on_the_inputs_device_and_current_stream():
    # The op must follow its inputs' device (CUDAGuard) and the caller's current stream.
    device = f"cuda:{torch.cuda.device_count() - 1}"
    inputs = make_inputs((1 << 20,), DTYPES[0], device, seed=10)
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        out = myteam_ops.muladd_tl(*inputs)
    stream.synchronize()
    assert out.device == torch.device(device)
    torch.testing.assert_close(out, expected(inputs), **TOLERANCES[DTYPES[0]])


@requires_cuda
def test_cuda_graph_capture():
    # Kernels launched on the legacy default stream would break capture; ours uses the current stream.
    inputs = make_inputs((4097,), DTYPES[0], "cuda", seed=11)
    myteam_ops.muladd_tl(*inputs)  # warm up outside the graph
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = myteam_ops.muladd_tl(*inputs)
    fresh = make_inputs((4097,), DTYPES[0], "cuda", seed=12)
    for x, y in zip(inputs, fresh):
        x.copy_(y)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, expected(fresh), **TOLERANCES[DTYPES[0]])


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "offset_1"])
def test_tensor_many_times_the_gpu(dtype, offset):
    # With 2**26 + 5 elements the grid is many times what the GPU holds at once, so the kernel
    # switches to several packs per thread (and, at offset 1, to its scalar path), ending in a
    # ragged last block and a tail of n % 16 elements. Smaller shapes never reach that code.
    n = 2**26 + 5
    generator = torch.Generator("cuda").manual_seed(5)
    inputs = [_sample((n + offset,), dtype, "cuda", generator)[offset:] for _ in range(N_INPUTS)]
    out = myteam_ops.muladd_tl(*inputs)
    torch.testing.assert_close(out, expected(inputs), **TOLERANCES[dtype])


@pytest.mark.large
@requires_cuda
def test_more_than_2_pow_31_elements():
    # int32 indexing would overflow here. Uses the smallest supported dtype, and checks the head,
    # a window across the 2**31 boundary and the tail against the reference.
    dtype = min(DTYPES, key=lambda d: d.itemsize)
    n = 2**31 + 2**20 + 3
    need = (N_INPUTS + 1) * n * dtype.itemsize
    free, _ = torch.cuda.mem_get_info()
    if free < need * 1.1:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    inputs = []
    for i in range(N_INPUTS):
        generator = torch.Generator("cuda").manual_seed(i)
        inputs.append(torch.empty(n, dtype=dtype, device="cuda").normal_(generator=generator))
    out = myteam_ops.muladd_tl(*inputs)
    for start, stop in [(0, 4096), (2**31 - 4096, 2**31 + 4096), (n - 4096, n)]:
        window = [x[start:stop] for x in inputs]
        torch.testing.assert_close(out[start:stop], expected(window), **TOLERANCES[dtype])


# ---- the eager fast path (ops/muladd_tl.py: a plain eager call launches without the dispatcher) --
def _op_module():
    return importlib.import_module("myteam_ops.ops.muladd_tl")


def test_eager_fast_path_is_for_cuda_tensors_only():
    # CPU tensors must reach the registered op (its CPU kernel), never the Triton launch.
    dtype = DTYPES[0]
    assert not _op_module()._eager_launch_ok(*make_inputs((1000,), dtype, "cpu", seed=21))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eager_fast_path_matches_the_registered_op(dtype):
    args = make_inputs((1000,), dtype, "cuda", seed=21)
    assert _op_module()._eager_launch_ok(*args), "a plain eager call should take the fast path"
    assert torch.equal(myteam_ops.muladd_tl(*args), OP(*args))


@requires_cuda
def test_eager_fast_path_steps_aside_when_the_dispatcher_is_needed():
    from torch.utils._python_dispatch import TorchDispatchMode

    module = _op_module()
    dtype = DTYPES[0]
    args = make_inputs((1000,), dtype, "cuda", seed=21)
    needs_grad = [args[0].detach().requires_grad_()] + args[1:]
    assert not module._eager_launch_ok(*needs_grad)  # autograd must record the op
    with torch.no_grad():
        assert module._eager_launch_ok(*needs_grad)
    assert module._eager_launch_ok(*[torch.nn.Parameter(t, requires_grad=False) for t in args])
    with torch.device("cuda"):  # a TorchFunctionMode
        assert not module._eager_launch_ok(*args)

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    with Seen() as seen:
        out = myteam_ops.muladd_tl(*args)
    assert OP in seen.ops, "a TorchDispatchMode must see the op"
    torch.testing.assert_close(out, expected(args), **TOLERANCES[dtype])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        myteam_ops.muladd_tl(*args)
    assert "myteam::muladd_tl" in {event.name for event in profile.events()}, "the profiler must see the op"
