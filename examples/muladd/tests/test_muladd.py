"""Tests of muladd::muladd (CUDA C++ backend) on CPU and CUDA, for every dtype it supports.

Run: pytest -q                      (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or the extension was built without CUDA.
"""

from __future__ import annotations

import math

import pytest
import torch

import muladd
from muladd.ops.muladd import reference

OP = torch.ops.muladd.muladd.default
N_INPUTS = 3
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# Tolerances of the tests that compare PyTorch's arithmetic with itself: the backward (the vjp of
# reference() in op-math precision, in the op and in the test alike) and torch.compile against eager
# calls of the op. The op's own results are held to the error model below instead.
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


# ---- the error model: how far from the exact result a correct kernel may be -----------------------
# The tests compare the op with reference() evaluated in float64 on the same, already rounded inputs,
# which stands for the exact result. The error a correct kernel may have is not one rtol/atol per
# dtype: it is bounded per element from the expression itself. error_bound() below, written by
# kernelgen from the parsed expression, is a first-order running error bound: walking the expression
# in float64, each step passes on its operands' errors, scaled by its derivative, and adds its own
# rounding (u times the size of its result). A large intermediate (cancellation) or a steep function
# widens the bound exactly where the kernel's rounding can grow, and a well-conditioned expression
# keeps a tight one, so the tests neither fail a correct kernel nor let a wrong one through by chance.
# Functions add their documented error (FUNCTION_ULPS), and the result one rounding to the output dtype.

#: The bound is first order: it drops terms of order u**2 and takes the derivatives at the exact values
#: rather than at the kernel's. SAFETY covers both, for the price of one bit of the tolerance.
SAFETY = 2.0
#: The output's own rounding, relative and absolute (subnormals): float16 and bfloat16 results are
#: computed in float32 and rounded once more when stored; float32 and float64 store the op-math result.
OUTPUT_ROUNDING = {torch.float16: (2.0**-11, 2.0**-25), torch.bfloat16: (2.0**-8, 2.0**-134)}
#: Each function's own error in ulps of its result, the largest among what the kernels and the reference
#: call: CUDA's libdevice maxima (CUDA C Programming Guide, "Mathematical Functions"), raised where
#: PyTorch's CPU functions measured more (sqrt, and rsqrt in double); glibc's (the CPU loop) are within
#: them. "/" is one division, or a reciprocal and a product (a division by a value computed once per
#: row multiplies by its reciprocal). An entry (k, s, a) is k + s |x| ulps, plus a absolutely.
ACCURATE_FLOAT = {"exp": 2, "log": 1, "sqrt": 1, "rsqrt": 2, "tanh": 2, "sin": 2, "cos": 2, "erf": 2, "pow": 4, "/": 1}
ACCURATE_DOUBLE = {"exp": 1, "log": 1, "sqrt": 1, "rsqrt": 2, "tanh": 2, "sin": 2, "cos": 2, "erf": 2, "pow": 2, "/": 1}
# The CUDA kernels compute float16 and bfloat16 in opmath::fast_float (csrc/opmath.h): exp is __expf
# (2 + 1.173 |x| ulps) and division is div.full.f32 (2 ulps, 3 with a reciprocal's product).
FAST_FLOAT = {**ACCURATE_FLOAT, "exp": (2, 1.173, 0.0), "/": 3}
FUNCTION_ULPS = {torch.float32: ACCURATE_FLOAT, torch.float64: ACCURATE_DOUBLE,
                 torch.float16: FAST_FLOAT, torch.bfloat16: FAST_FLOAT}


class ErrorModel:
    """What the bound counts for one dtype, in units of op-math's unit roundoff u: error_bound()
    calls these methods for each step of the expression. (Their names are long on purpose: the
    generated code's identifiers are names an input cannot have.)"""

    def __init__(self, dtype):
        self.dtype = dtype
        self.opmath = torch.float64 if dtype == torch.float64 else torch.float32
        info = torch.finfo(self.opmath)
        self.u = info.eps / 2
        self.tiny = info.tiny / self.u  # an underflow, or a flush to zero, loses up to the smallest normal number
        self.largest = info.max
        self.ulps = FUNCTION_ULPS[dtype]

    def one_rounding(self, t):
        """One rounding of t to op-math: u |t|, and no bound where op-math overflows."""
        size = t.abs()
        return torch.where(size > self.largest, math.inf, size + self.tiny)

    def literal_rounding(self, c):
        """The rounding of the number c where the kernel writes it in op-math."""
        return abs(torch.tensor(c, dtype=self.opmath).item() - c) / self.u

    def _ulps_of(self, func, x):
        """func's own error at x, in ulps of its result, and its absolute part in units of u."""
        entry = self.ulps[func]
        if not isinstance(entry, tuple):
            return entry, 0.0
        return entry[0] + entry[1] * x.abs(), entry[2] / self.u

    def function_error(self, func, x, y):
        """The own error of y = func(x): k ulps are at most 2 k u |y| (an ulp is at most 2 u of a value)."""
        count, abs_floor = self._ulps_of("exp" if func == "sigmoid" else func, x)
        if func == "sigmoid":
            # 1 / (1 + e), e = exp(-x): e's relative error reaches y scaled by e / (1 + e) = 1 - y; then
            # the rounding of 1 + e and the division's
            count = count * (1 - y) + 0.5 + self._ulps_of("/", x)[0]
        return 2 * count * y.abs() + abs_floor + self.tiny

    def division_error(self, q):
        return 2 * self._ulps_of("/", q)[0] * q.abs() + self.tiny

    def power_error(self, x, p, y):
        """The own error of y = x ** p for a number p: multiplications for a whole p up to 16 (|p| - 1
        roundings, and a division for a negative p), sqrt for 0.5, pow otherwise (and p's own rounding)."""
        if p == 0.5:
            return self.function_error("sqrt", x, y)
        if p == int(p) and abs(p) <= 16:
            return (abs(p) - 1) * self.one_rounding(y) + (self.division_error(y) if p < 0 else 0.0)
        return self.function_error("pow", x, y) + (y * torch.log(x)).abs() * self.literal_rounding(p)

    def larger_error(self, first, second):
        return torch.maximum(torch.as_tensor(first), torch.as_tensor(second))

    def allowed_error(self, want, bound_in_u):
        """The error an element of the op may have: SAFETY times the bound in op-math (and in the
        float64 reference, whose own rounding the same model bounds), plus the output's rounding."""
        in_opmath = SAFETY * (self.u + 2.0**-53) * _per_element(want, bound_in_u)
        out_relative, out_absolute = OUTPUT_ROUNDING.get(self.dtype, (0.0, 0.0))
        return in_opmath + out_relative * (want.abs() + in_opmath) + out_absolute


def _per_element(t, value):
    """value (a number or a tensor broadcastable to t) as a tensor of t's shape."""
    return torch.broadcast_to(torch.as_tensor(value, dtype=t.dtype, device=t.device), t.shape)


def error_bound(_m, a, b, c):
    """The bound on the rounding error of a * b + c, in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; the model above says what each term means)."""
    _t0 = a * b  # a * b
    _e0 = _m.one_rounding(_t0)
    _t1 = _t0 + c  # a * b + c
    _e1 = _e0 + _m.one_rounding(_t1)
    return _e1


class Mismatches:
    """The elements of an output outside their bound, gathered over one or more pieces of it."""

    def __init__(self, out):
        self.out = out
        self.count = 0
        self.worst = None

    def check_piece(self, got, want, allowed_err, offset=0):
        """Checks got (a flat piece of the output from element `offset`) against want, within allowed."""
        got_f64 = got.double()
        # inf * 0 in the model gives NaN: the model cannot bound that element
        allowed_err = torch.where(allowed_err.isnan(), math.inf, allowed_err)
        error = (got_f64 - want).abs()
        is_within = error <= allowed_err
        # Where the exact result is NaN or infinite, or overflows the output dtype, the op must give the
        # same special value; a result within its bound of the largest finite number may overflow.
        as_stored = want.to(got.dtype).double()
        not_finite = ~torch.isfinite(as_stored)
        is_within |= not_finite & ((got_f64 == as_stored) | (got_f64.isnan() & as_stored.isnan()))
        is_within |= got_f64.isinf() & (got_f64 == want.sign() * math.inf) & (want.abs() + allowed_err >= torch.finfo(got.dtype).max)
        n_outside = int((~is_within).sum())
        if n_outside:
            self.count += n_outside
            excess_ratio = torch.where(is_within, -1.0, error / allowed_err)
            excess_ratio = torch.where(excess_ratio.isnan(), math.inf, excess_ratio)
            i = int(excess_ratio.argmax())
            if self.worst is None or excess_ratio[i] > self.worst[0]:
                self.worst = (float(excess_ratio[i]), offset + i, float(got_f64[i]), float(want[i]), float(allowed_err[i]))

    def check(self):
        if self.count:
            excess_ratio, flat_index, got, want, allowed_err = self.worst
            worst_at = tuple(int(k) for k in torch.unravel_index(torch.tensor(flat_index), self.out.shape))
            raise AssertionError(
                f"{self.count} of {self.out.numel()} elements ({self.out.dtype}) are outside their error bound; "
                f"the worst, at {worst_at}: got {got!r}, exact {want!r}: |error| {abs(got - want):.3g} is "
                f"{excess_ratio:.3g} times its bound {allowed_err:.3g} (error_bound() and the model above)")


#: Elements checked at a time: the float64 reference and its bound hold about 20 tensors of this size.
CHUNK = 2**22


def expected_and_bound(inputs):
    """The exact result (reference() in float64 on the same, already rounded inputs) and the error
    each element of the op may have (the error model above)."""
    error_model = ErrorModel(inputs[0].dtype)
    exact_args = [x.double() for x in inputs]
    want = reference(*exact_args)
    return want, error_model.allowed_error(want, error_bound(error_model, *exact_args))


def assert_matches(out, inputs):
    """Asserts that every element of out is within its error bound of the exact result."""
    assert out.shape == inputs[0].shape
    flat_inputs = [x.reshape(-1) for x in inputs]
    got = out.reshape(-1)
    mismatches = Mismatches(out)
    for start in range(0, got.numel(), CHUNK):
        want, allowed_err = expected_and_bound([x[start:start + CHUNK] for x in flat_inputs])
        mismatches.check_piece(got[start:start + CHUNK], want, allowed_err, offset=start)
    mismatches.check()


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not muladd.WITH_CUDA:
        return "muladd was built without CUDA (no toolkit at build time)"
    return None


requires_cuda = pytest.mark.skipif(_cuda_skip_reason() is not None, reason=_cuda_skip_reason() or "")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
SHAPES = [(0,), (1,), (255,), (257,), (1000003,), (33, 65), (3, 17, 31)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_reference(device, dtype, shape):
    inputs = make_inputs(shape, dtype, device)
    out = muladd.muladd(*inputs)
    assert out.shape == inputs[0].shape and out.dtype == dtype and out.device == inputs[0].device
    assert out.is_contiguous()
    assert_matches(out, inputs)


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
    out = muladd.muladd(*inputs)
    assert_matches(out, inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_alignment(device):
    # One aligned input next to a misaligned one must still give the right answer.
    inputs = make_inputs((4099,), torch.float32, device, seed=2)
    inputs[-1] = make_inputs((4100,), torch.float32, device, seed=3)[0][1:]
    out = muladd.muladd(*inputs)
    assert_matches(out, inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    inputs = [x.requires_grad_() for x in make_inputs((4, 7), torch.float64, device, seed=4)]
    assert torch.autograd.gradcheck(OP, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward_matches_reference(device, dtype):
    inputs = [x.requires_grad_() for x in make_inputs((513,), dtype, device, seed=5)]
    grad_out = make_inputs((513,), dtype, device, seed=6)[0]
    grads = torch.autograd.grad(muladd.muladd(*inputs), inputs, grad_out)
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
        return muladd.muladd(*xs) * 2

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
    first = muladd.muladd(*inputs)
    second = muladd.muladd(*inputs)
    assert torch.equal(first, second)


@pytest.mark.parametrize("device", DEVICES)
def test_error_unsupported_dtype(device):
    inputs = [torch.ones(4, dtype=torch.int32, device=device) for _ in range(N_INPUTS)]
    with pytest.raises(RuntimeError, match=r"muladd: a has dtype Int, but muladd supports"):
        muladd.muladd(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_shape_mismatch(device):
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[-1] = make_inputs((9,), DTYPES[0], device)[0]
    with pytest.raises(RuntimeError, match=r"muladd: c has shape \[9\] but a has shape \[8\]"):
        muladd.muladd(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_no_broadcasting(device):
    inputs = make_inputs((4, 8), DTYPES[0], device)
    inputs[-1] = inputs[-1][:1]
    with pytest.raises(RuntimeError, match=r"c has shape \[1, 8\].*no broadcasting"):
        muladd.muladd(*inputs)


@pytest.mark.parametrize("device", DEVICES)
def test_error_dtype_mismatch(device):
    if len(DTYPES) < 2:
        pytest.skip("muladd supports a single dtype")
    inputs = make_inputs((8,), DTYPES[0], device)
    inputs[-1] = inputs[-1].to(DTYPES[1])
    with pytest.raises(RuntimeError, match=r"muladd: c has dtype .* but a has dtype"):
        muladd.muladd(*inputs)


@requires_cuda
def test_error_device_mismatch():
    inputs = make_inputs((8,), DTYPES[0], "cuda")
    inputs[-1] = inputs[-1].cpu()
    with pytest.raises(RuntimeError, match=r"muladd: c is on cpu but a is on cuda"):
        muladd.muladd(*inputs)


def test_error_sparse_input():
    inputs = make_inputs((8,), DTYPES[0], "cpu")
    inputs[0] = inputs[0].to_sparse()
    with pytest.raises(RuntimeError, match=r"muladd: a must be a dense tensor"):
        muladd.muladd(*inputs)


def test_error_not_a_tensor():
    inputs = make_inputs((8,), DTYPES[0], "cpu")
    inputs[-1] = 1.5
    with pytest.raises(TypeError, match=r"muladd: c must be a torch.Tensor, got float"):
        muladd.muladd(*inputs)


def test_error_wrong_argument_count():
    with pytest.raises(TypeError):
        muladd.muladd(*make_inputs((8,), DTYPES[0], "cpu")[:-1])


@requires_cuda
def test_runs_on_the_inputs_device_and_current_stream():
    # The op must follow its inputs' device (CUDAGuard) and the caller's current stream.
    device = f"cuda:{torch.cuda.device_count() - 1}"
    inputs = make_inputs((1 << 20,), DTYPES[0], device, seed=10)
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        out = muladd.muladd(*inputs)
    stream.synchronize()
    assert out.device == torch.device(device)
    assert_matches(out, inputs)


@requires_cuda
def test_cuda_graph_capture():
    # Kernels launched on the legacy default stream would break capture; ours uses the current stream.
    inputs = make_inputs((4097,), DTYPES[0], "cuda", seed=11)
    muladd.muladd(*inputs)  # warm up outside the graph
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = muladd.muladd(*inputs)
    fresh = make_inputs((4097,), DTYPES[0], "cuda", seed=12)
    for x, y in zip(inputs, fresh):
        x.copy_(y)
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(out, fresh)


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
    out = muladd.muladd(*inputs)
    assert_matches(out, inputs)


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
    out = muladd.muladd(*inputs)
    for start, stop in [(0, 4096), (2**31 - 4096, 2**31 + 4096), (n - 4096, n)]:
        window = [x[start:stop] for x in inputs]
        assert_matches(out[start:stop], window)
