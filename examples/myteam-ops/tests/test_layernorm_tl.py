"""Tests of myteam::layernorm_tl (Triton backend, rowwise) on CPU and CUDA, for every dtype it supports.

Run: pytest -q                      (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or triton is not installed.
"""

from __future__ import annotations

import importlib

import pytest
import torch

import myteam_ops
from myteam_ops.ops.layernorm_tl import TRITON_AVAILABLE, reference

OP = torch.ops.myteam.layernorm_tl.default
N_INPUTS = 1
N_WEIGHTS = 2
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# Tolerances against the reference, which is evaluated in op-math precision (float32 for the half
# types, as the kernels do) and rounded once. What remains is the rounding of the result, the
# order of each row's reduction (the kernels fold in a fixed tree, PyTorch in its own), and ulp-level
# differences between math libraries.
TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-9, atol=1e-11),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}

# The expression is only real and smooth for positive arguments (it takes a log, a root, or divides),
# so inputs and weights are drawn from [0.5, 2.5).
def _sample(shape, dtype, device, generator):
    values = torch.rand(shape, generator=generator, dtype=torch.float64, device=generator.device)
    return (values * 2 + 0.5).to(device=device, dtype=dtype)


def make_args(shape, dtype, device, seed=0):
    """The inputs (of ``shape``) followed by the weights (one value per element of a row)."""
    generator = torch.Generator().manual_seed(seed)
    inputs = [_sample(shape, dtype, device, generator) for _ in range(N_INPUTS)]
    weights = [_sample((shape[-1],), dtype, device, generator) for _ in range(N_WEIGHTS)]
    return inputs + weights


def expected(args):
    """The reference, computed in op-math precision and rounded once to the inputs' dtype."""
    dtype = args[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    return reference(*(t.to(opmath) for t in args)).to(dtype)


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not TRITON_AVAILABLE:
        return "triton is not installed, so layernorm_tl has no CUDA implementation"
    return None


requires_cuda = pytest.mark.skipif(_cuda_skip_reason() is not None, reason=_cuda_skip_reason() or "")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
# Row lengths around a warp (31, 32, 33), odd ones that defeat 16-byte vectors (1000 in float64 is
# fine, 4099 is not), the last row held in registers (16384) and the first that is not (16385, 65537).
ROW_LENGTHS = [1, 31, 32, 33, 1000, 4099, 16384, 16385, 65537]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cols", ROW_LENGTHS)
def test_matches_reference(device, dtype, cols):
    args = make_args((5, cols), dtype, device, seed=cols)
    out = myteam_ops.layernorm_tl(*args)
    assert out.shape == args[0].shape and out.dtype == dtype and out.device == args[0].device
    assert out.is_contiguous()
    torch.testing.assert_close(out, expected(args), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 7), (3, 0), (1000,), (2, 3, 33), (2, 1, 3, 129), (1333, 64)], ids=str)
def test_shapes(device, shape):
    # No rows, empty rows, a single row (1-D), batches of rows in 3-D and 4-D, and many short rows
    # (several rows per block on the GPU, the last block part-filled).
    dtype = DTYPES[0]
    args = make_args(shape, dtype, device, seed=1)
    out = myteam_ops.layernorm_tl(*args)
    assert out.shape == args[0].shape
    if out.numel():
        torch.testing.assert_close(out, expected(args), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("view", ["transposed", "strided_slice", "offset_1", "offset_weights"])
def test_non_contiguous_and_misaligned(device, dtype, view):
    # Transposed and strided views take the .contiguous() path. Offset views start 1 element into
    # their storage: their pointers are not 16-byte aligned, so the CUDA kernel takes its scalar path.
    rows, cols = 37, 256
    if view == "transposed":
        base = make_args((cols, rows), dtype, device, seed=2)
        args = [t.t() for t in base[:N_INPUTS]] + make_args((rows, cols), dtype, device, seed=3)[N_INPUTS:]
    elif view == "strided_slice":
        args = [t[..., ::2] for t in make_args((rows, 2 * cols), dtype, device, seed=2)]
    elif view == "offset_1":
        args = make_args((rows, cols), dtype, device, seed=4)
        args[:N_INPUTS] = [torch.cat([t.new_zeros(1), t.flatten()])[1:].view(rows, cols) for t in args[:N_INPUTS]]
    else:
        if N_WEIGHTS == 0:
            pytest.skip("layernorm_tl has no weights")
        args = make_args((rows, cols), dtype, device, seed=6)
        args[N_INPUTS:] = [torch.cat([t.new_zeros(1), t])[1:] for t in args[N_INPUTS:]]
    assert args[0].shape == (rows, cols)
    out = myteam_ops.layernorm_tl(*args)
    torch.testing.assert_close(out, expected([t.contiguous() for t in args]), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_large_values(device):
    # Values around 1e4: a softmax that did not subtract the row's maximum first would overflow
    # (exp(1e4) is inf even in float64). Wherever the reference is finite, the op must be too.
    dtype = torch.float32
    args = make_args((16, 1000), dtype, device, seed=7)
    args[:N_INPUTS] = [t * 1e4 for t in args[:N_INPUTS]]
    out = myteam_ops.layernorm_tl(*args)
    want = expected(args)
    finite = torch.isfinite(want)
    assert torch.equal(torch.isfinite(out), finite)
    torch.testing.assert_close(out[finite], want[finite], **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    args = [t.requires_grad_() for t in make_args((3, 7), torch.float64, device, seed=8)]
    assert torch.autograd.gradcheck(OP, args, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward_matches_reference(device, dtype):
    args = [t.requires_grad_() for t in make_args((9, 130), dtype, device, seed=9)]
    grad_out = make_args((9, 130), dtype, device, seed=10)[0]
    grads = torch.autograd.grad(myteam_ops.layernorm_tl(*args), args, grad_out)
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    leaves = [t.detach().to(opmath).requires_grad_() for t in args]
    ref_grads = torch.autograd.grad(reference(*leaves), leaves, grad_out.to(opmath))
    for got, want in zip(grads, ref_grads):
        # a weight's gradient sums over the rows: allow for that sum's rounding
        torch.testing.assert_close(got, want.to(dtype), **{k: 4 * v for k, v in TOLERANCES[dtype].items()})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, requires_grad):
    # Checks the schema, the fake implementation, the autograd registration and the op's
    # behaviour under torch.compile's tracing (it does not check gradient values: gradcheck does).
    args = [t.requires_grad_(requires_grad) for t in make_args((5, 9), DTYPES[0], device, seed=11)]
    torch.library.opcheck(OP, args)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()
    args = [t.requires_grad_() for t in make_args((6, 100), DTYPES[0], device, seed=12)]

    def f(*ts):
        return myteam_ops.layernorm_tl(*ts) * 2

    compiled = torch.compile(f, fullgraph=True)
    out = compiled(*args)
    torch.testing.assert_close(out, f(*args), **TOLERANCES[DTYPES[0]])
    grads = torch.autograd.grad(out.sum(), args)
    want = torch.autograd.grad(f(*args).sum(), args)
    for got, ref in zip(grads, want):
        torch.testing.assert_close(got, ref, **TOLERANCES[DTYPES[0]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cols", [1000, 4099, 65537])
def test_bitwise_deterministic(device, dtype, cols):
    args = make_args((64, cols), dtype, device, seed=13)
    first = myteam_ops.layernorm_tl(*args)
    for _ in range(3):
        assert torch.equal(myteam_ops.layernorm_tl(*args), first)


@pytest.mark.parametrize("device", DEVICES)
def test_error_unsupported_dtype(device):
    args = [torch.ones(2, 4, dtype=torch.int32, device=device) for _ in range(N_INPUTS)]
    args += [torch.ones(4, dtype=torch.int32, device=device) for _ in range(N_WEIGHTS)]
    with pytest.raises(RuntimeError, match=r"layernorm_tl: x has dtype torch.int32, but layernorm_tl supports"):
        myteam_ops.layernorm_tl(*args)


@pytest.mark.parametrize("device", DEVICES)
def test_error_zero_dimensional(device):
    args = make_args((4,), DTYPES[0], device)
    args[:N_INPUTS] = [t[0] for t in args[:N_INPUTS]]
    with pytest.raises(RuntimeError, match=r"layernorm_tl: x .*0-dimensional|layernorm_tl: x needs at least one dimension"):
        myteam_ops.layernorm_tl(*args)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(9,), (8, 1), (1, 8)], ids=str)
def test_error_weight_shape(device, shape):
    args = make_args((2, 8), DTYPES[0], device)
    args[-1] = make_args(shape, DTYPES[0], device)[0]
    with pytest.raises(RuntimeError, match=r"layernorm_tl: weight b has shape .* but must be"):
        myteam_ops.layernorm_tl(*args)


@pytest.mark.parametrize("device", DEVICES)
def test_error_weight_dtype(device):
    if len(DTYPES) < 2:
        pytest.skip("layernorm_tl supports a single dtype")
    args = make_args((2, 8), DTYPES[0], device)
    args[-1] = args[-1].to(DTYPES[1])
    with pytest.raises(RuntimeError, match=r"layernorm_tl: weight b has dtype .* but x has dtype"):
        myteam_ops.layernorm_tl(*args)


@requires_cuda
def test_error_weight_device():
    args = make_args((2, 8), DTYPES[0], "cuda")
    args[-1] = args[-1].cpu()
    with pytest.raises(RuntimeError, match=r"layernorm_tl: weight b is on cpu but x is on cuda"):
        myteam_ops.layernorm_tl(*args)


def test_error_sparse_input():
    args = make_args((2, 8), DTYPES[0], "cpu")
    args[0] = args[0].to_sparse()
    with pytest.raises(RuntimeError, match=r"layernorm_tl: x must be a dense tensor"):
        myteam_ops.layernorm_tl(*args)


def test_error_not_a_tensor():
    args = make_args((2, 8), DTYPES[0], "cpu")
    args[-1] = 1.5
    with pytest.raises(TypeError, match=r"layernorm_tl: b must be a torch.Tensor, got float"):
        myteam_ops.layernorm_tl(*args)


@requires_cuda
def test_runs_on_the_inputs_device_and_current_stream():
    device = f"cuda:{torch.cuda.device_count() - 1}"
    args = make_args((512, 1024), DTYPES[0], device, seed=14)
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        out = myteam_ops.layernorm_tl(*args)
    stream.synchronize()
    assert out.device == torch.device(device)
    torch.testing.assert_close(out, expected(args), **TOLERANCES[DTYPES[0]])


@requires_cuda
def test_cuda_graph_capture():
    args = make_args((33, 4099), DTYPES[0], "cuda", seed=15)
    myteam_ops.layernorm_tl(*args)  # warm up outside the graph
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = myteam_ops.layernorm_tl(*args)
    fresh = make_args((33, 4099), DTYPES[0], "cuda", seed=16)
    for t, u in zip(args, fresh):
        t.copy_(u)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, expected(fresh), **TOLERANCES[DTYPES[0]])


@pytest.mark.large
@requires_cuda
def test_more_than_2_pow_31_elements():
    # int32 row offsets would overflow here. Rows of 1024 in the smallest supported dtype; the first
    # rows, the rows across element 2**31 and the last rows are checked against the reference.
    dtype = min(DTYPES, key=lambda d: d.itemsize)
    cols = 1024
    rows = 2**31 // cols + 3
    need = (N_INPUTS + 1) * rows * cols * dtype.itemsize
    free, _ = torch.cuda.mem_get_info()
    if free < need * 1.1:
        pytest.skip(f"needs {need / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    generator = torch.Generator("cuda").manual_seed(17)
    args = [_sample((rows, cols), dtype, "cuda", generator) for _ in range(N_INPUTS)]
    args += [_sample((cols,), dtype, "cuda", generator) for _ in range(N_WEIGHTS)]
    out = myteam_ops.layernorm_tl(*args)
    boundary = 2**31 // cols
    for start, stop in [(0, 4), (boundary - 2, boundary + 2), (rows - 4, rows)]:
        window = [t[start:stop] for t in args[:N_INPUTS]] + args[N_INPUTS:]
        torch.testing.assert_close(out[start:stop], expected(window), **TOLERANCES[dtype])


# ---- the eager fast path (ops/layernorm_tl.py: a plain eager call launches without the dispatcher) --
def _op_module():
    return importlib.import_module("myteam_ops.ops.layernorm_tl")


def test_eager_fast_path_is_for_cuda_tensors_only():
    # CPU tensors must reach the registered op (its CPU kernel), never the Triton launch.
    dtype = DTYPES[0]
    assert not _op_module()._eager_launch_ok(*make_args((64, 1000), dtype, "cpu", seed=21))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eager_fast_path_matches_the_registered_op(dtype):
    args = make_args((64, 1000), dtype, "cuda", seed=21)
    assert _op_module()._eager_launch_ok(*args), "a plain eager call should take the fast path"
    assert torch.equal(myteam_ops.layernorm_tl(*args), OP(*args))


@requires_cuda
def test_eager_fast_path_steps_aside_when_the_dispatcher_is_needed():
    from torch.utils._python_dispatch import TorchDispatchMode

    module = _op_module()
    dtype = DTYPES[0]
    args = make_args((64, 1000), dtype, "cuda", seed=21)
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
        out = myteam_ops.layernorm_tl(*args)
    assert OP in seen.ops, "a TorchDispatchMode must see the op"
    torch.testing.assert_close(out, expected(args), **TOLERANCES[dtype])
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        myteam_ops.layernorm_tl(*args)
    assert "myteam::layernorm_tl" in {event.name for event in profile.events()}, "the profiler must see the op"
