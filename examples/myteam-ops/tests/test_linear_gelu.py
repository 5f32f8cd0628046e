"""Tests of myteam::linear_gelu (C = epilogue(A @ B, bias)) on CPU and CUDA, for every dtype it supports.

Run: pytest -q. CUDA tests skip, with the reason, when no GPU is visible or the extension was built
without CUDA.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest
import torch

import myteam_ops
from myteam_ops.ops.linear_gelu import reference

OP = torch.ops.myteam.linear_gelu.default
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

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
# The dot product of length K adds the rounding of its K products and partial sums (ErrorModel.dot_error).

#: The bound is first order: it drops terms of order u**2 and takes the derivatives at the exact values
#: rather than at the kernel's. SAFETY covers both, for the price of one bit of the tolerance.
SAFETY = 2.0
#: A sum's rounding errors are u times the partial sums they round, with random signs: by Hoeffding's
#: inequality they add up to at most LAMBDA * u * sqrt(sum of the partial sums' squares), except with
#: probability 2 exp(-LAMBDA**2 / 2) = 4e-22 per sum (the probabilistic analysis of Higham and Mary,
#: SIAM J. Sci. Comput., 2019). The worst case, every rounding in one direction, grows with the length
#: of the sum instead of its square root: too loose to see a term dropped from a long sum.
LAMBDA = 10.0
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

    def dot_error(self, a, b):
        """The rounding error of each element of a @ b (float64 tensors, [batch,] M x K and K x N) when
        the kernel accumulates along K in op-math, in units of u: a rounding of each product and of each
        partial sum. Every kernel of this package accumulates along K in order (the CPU loop and the
        float32/float64 kernel one product at a time, the tensor cores 16 at a time), so the partial sums
        are the prefix sums of the products: LAMBDA times the root of the sum of their squares and the
        products' (LAMBDA), at most the worst case, K times the sum of |a| |b|."""
        k = a.shape[-1]
        sum_of_squares = torch.zeros(a.shape[:-1] + b.shape[-1:], dtype=a.dtype, device=a.device)
        prefix_sum = torch.zeros_like(sum_of_squares)
        k_step = max(1, 2**22 // max(1, sum_of_squares.numel()))  # k_step values of k at a time
        for start in range(0, k, k_step):
            k_products = a[..., :, start:start + k_step, None] * b[..., None, start:start + k_step, :]  # [..., M, k_step, N]
            partial_sums = prefix_sum.unsqueeze(-2) + k_products.cumsum(-2)
            sum_of_squares += (partial_sums * partial_sums + k_products * k_products).sum(-2)
            prefix_sum = partial_sums[..., -1, :]
        return torch.minimum(LAMBDA * sum_of_squares.sqrt(), k * torch.matmul(a.abs(), b.abs()))

    def allowed_error(self, want, bound_in_u):
        """The error an element of the op may have: SAFETY times the bound in op-math (and in the
        float64 reference, whose own rounding the same model bounds), plus the output's rounding."""
        in_opmath = SAFETY * (self.u + 2.0**-53) * _per_element(want, bound_in_u)
        out_relative, out_absolute = OUTPUT_ROUNDING.get(self.dtype, (0.0, 0.0))
        return in_opmath + out_relative * (want.abs() + in_opmath) + out_absolute


def _per_element(t, value):
    """value (a number or a tensor broadcastable to t) as a tensor of t's shape."""
    return torch.broadcast_to(torch.as_tensor(value, dtype=t.dtype, device=t.device), t.shape)


def error_bound(_m, acc, bias, acc_error):
    """The bound on the rounding error of (acc + bias) * sigmoid(1.702 * (acc + bias)), in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; the model above says what each term means)."""
    _t0 = acc + bias  # acc + bias
    _e0 = acc_error + _m.one_rounding(_t0)
    _t1 = acc + bias  # acc + bias
    _e1 = acc_error + _m.one_rounding(_t1)
    _t2 = 1.702 * _t1  # 1.702 * (acc + bias)
    _e2 = _t1.abs() * _m.literal_rounding(1.702) + 1.702 * _e1 + _m.one_rounding(_t2)
    _t3 = torch.sigmoid(_t2)  # sigmoid(1.702 * (acc + bias))
    _e3 = _t3 * (1.0 - _t3) * _e2 + _m.function_error('sigmoid', _t2, _t3)
    _t4 = _t0 * _t3  # (acc + bias) * sigmoid(1.702 * (acc + bias))
    _e4 = _t3.abs() * _e0 + _t0.abs() * _e3 + _m.one_rounding(_t4)
    return _e4


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


@functools.lru_cache(maxsize=None)
def _bias(n, dtype, device):
    return make((n,), dtype, device, 99)


def bias_for(b):
    """The bias the tests pass with B: N elements of B's dtype, on B's device. One tensor per shape,
    made once: a CUDA graph capture must not copy a new one from the CPU."""
    return _bias(b.shape[-1], b.dtype, b.device)


def run(a, b):
    """The op under test, with the bias of bias_for(b)."""
    return myteam_ops.linear_gelu(a, b, bias_for(b))


def expected_and_bound(a, b):
    """The exact result (reference() in float64 on the same, already rounded inputs) and the error
    each element of the op may have: the dot product of length K in op-math precision (dot_error),
    then the epilogue's rounding (the error model above)."""
    error_model = ErrorModel(a.dtype)
    a64, b64 = a.double(), b.double()
    want = reference(a64, b64, bias_for(b).double())
    acc = torch.matmul(a64, b64)
    acc_error = error_model.dot_error(a64, b64)
    return want, error_model.allowed_error(want, error_bound(error_model, acc, bias_for(b).double(), acc_error))


def assert_matches(out, a, b):
    """Asserts that every element of out is within its error bound of the exact result."""
    want, allowed_err = expected_and_bound(a, b)
    assert out.shape == want.shape
    mismatches = Mismatches(out)
    mismatches.check_piece(out.reshape(-1), want.reshape(-1), allowed_err.reshape(-1))
    mismatches.check()


def make(shape, dtype, device, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not myteam_ops.WITH_CUDA:
        return "linear_gelu was built without CUDA (no toolkit at build time)"
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
    assert k0.shape == (5, 7)
    assert_matches(k0, a0, b0)  # the epilogue of acc = 0
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
    bias = make((3,), torch.float64, device, 21).requires_grad_()
    assert torch.autograd.gradcheck(OP, (a, b, bias))
    a3 = make((2, 4, 5), torch.float64, device, 8).requires_grad_()
    b3 = make((2, 5, 3), torch.float64, device, 9).requires_grad_()
    assert torch.autograd.gradcheck(OP, (a3, b3, bias))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, requires_grad):
    a = make((9, 6), DTYPES[0], device, 10).requires_grad_(requires_grad)
    b = make((6, 11), DTYPES[0], device, 11).requires_grad_(requires_grad)
    bias = make((11,), DTYPES[0], device, 22).requires_grad_(requires_grad)
    torch.library.opcheck(OP, (a, b, bias))
    torch.library.opcheck(OP, (make((2, 3, 4), DTYPES[0], device, 12), make((2, 4, 5), DTYPES[0], device, 13),
                               make((5,), DTYPES[0], device, 23)))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()
    a = make((33, 17), DTYPES[0], device, 14).requires_grad_()
    b = make((17, 9), DTYPES[0], device, 15).requires_grad_()

    bias = make((9,), DTYPES[0], device, 26).requires_grad_()
    inputs = (a, b, bias)

    def f(x, y, z):
        return myteam_ops.linear_gelu(x, y, z).relu()

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
    with pytest.raises(RuntimeError, match=r"linear_gelu: inner dimensions differ: A \[3, 4\] has 4 columns but B \[5, 6\] has 5 rows"):
        run(make((3, 4), DTYPES[0], device, 0), make((5, 6), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_rank(device):
    with pytest.raises(RuntimeError, match=r"linear_gelu: expected A and B both 2-D .* got A \[3\] and B \[3, 2\]"):
        run(make((3,), DTYPES[0], device, 0), make((3, 2), DTYPES[0], device, 0))
    with pytest.raises(RuntimeError, match=r"got A \[2, 3, 4\] and B \[4, 5\]"):
        run(make((2, 3, 4), DTYPES[0], device, 0), make((4, 5), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_batch_mismatch(device):
    with pytest.raises(RuntimeError, match=r"linear_gelu: batch sizes differ: A \[2, 3, 4\], B \[3, 4, 5\]"):
        run(make((2, 3, 4), DTYPES[0], device, 0), make((3, 4, 5), DTYPES[0], device, 0))


@pytest.mark.parametrize("device", DEVICES)
def test_error_dtypes(device):
    if len(DTYPES) > 1:
        with pytest.raises(RuntimeError, match=r"linear_gelu: B has dtype .* but A has dtype"):
            run(make((3, 4), DTYPES[0], device, 0), make((4, 5), DTYPES[1], device, 0))
    with pytest.raises(RuntimeError, match=r"linear_gelu: A has dtype Int, but linear_gelu supports"):
        run(torch.ones(3, 4, dtype=torch.int32, device=device), torch.ones(4, 5, dtype=torch.int32, device=device))


@requires_cuda
def test_error_device_mismatch():
    with pytest.raises(RuntimeError, match=r"linear_gelu: B is on cpu but A is on cuda"):
        run(make((3, 4), DTYPES[0], "cuda", 0), make((4, 5), DTYPES[0], "cpu", 0))


def test_error_not_a_tensor():
    with pytest.raises(TypeError, match=r"linear_gelu: B must be a torch.Tensor, got list"):
        myteam_ops.linear_gelu(make((3, 4), DTYPES[0], "cpu", 0), [[1.0]], make((5,), DTYPES[0], "cpu", 0))


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


@pytest.mark.parametrize("device", DEVICES)
def test_error_bias(device):
    a, b = make((3, 4), DTYPES[0], device, 0), make((4, 5), DTYPES[0], device, 0)
    with pytest.raises(RuntimeError, match=r"linear_gelu: bias must be 1-D with N = 5 elements \(B is \[4, 5\]\), got bias \[4\]"):
        myteam_ops.linear_gelu(a, b, make((4,), DTYPES[0], device, 0))
    with pytest.raises(RuntimeError, match=r"linear_gelu: bias must be 1-D .* got bias \[1, 5\]"):
        myteam_ops.linear_gelu(a, b, make((1, 5), DTYPES[0], device, 0))
    if len(DTYPES) > 1:
        with pytest.raises(RuntimeError, match=r"linear_gelu: bias has dtype .* but A has dtype"):
            myteam_ops.linear_gelu(a, b, make((5,), DTYPES[1], device, 0))


def _hopper_path_reason():
    if _cuda_skip_reason() is not None:
        return _cuda_skip_reason()
    if torch.cuda.get_device_capability() != (9, 0):
        return "the CUTLASS path runs on sm_90 GPUs (H100, H200) only"
    info = Path(myteam_ops.__file__).parent / "_build_info.json"
    recorded = json.loads(info.read_text()) if info.is_file() else {}
    if not recorded.get("cutlass_sm90"):
        return recorded.get("cutlass_sm90_left_out") or (
            "myteam_ops was built without the CUTLASS path (no 9.0 target, or KERNELGEN_NO_CUTLASS=1)")
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
