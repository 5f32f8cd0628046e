"""Tests of myteam::softmax (CUDA C++ backend, rowwise) on CPU and CUDA, for every dtype it supports.

Run: pytest -q                      (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or the extension was built without CUDA.
"""

from __future__ import annotations

import math

import pytest
import torch

import myteam_ops
from myteam_ops.ops.softmax import reference

OP = torch.ops.myteam.softmax.default
N_INPUTS = 1
N_WEIGHTS = 0
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# Tolerances of the tests that compare PyTorch's arithmetic with itself: the backward (the vjp of
# reference() in op-math precision, in the op and in the test alike) and torch.compile against eager
# calls of the op. The op's own results are held to the error model below instead.
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
# A row reduction adds the rounding of a sum of the row's length (ErrorModel.sum_roundings).

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

    def sum_roundings(self, n):
        """The roundings of a row's sum of n terms, in units of u times the sum of their magnitudes. The
        kernels of this package add a row in chains of at most d = ceil(n / 64) + 41 additions: the CPU
        loop in 64 lanes (n / 64 each, then 6 pairwise levels), the CUDA kernel up to 32 elements per
        thread (n / 512 for rows longer than 16384) then 9 levels of shuffles, Triton in a tree (n / 4096
        per lane for long rows). Every rounding is u times a partial sum, none larger than the sum S of
        the terms' magnitudes, and a term passes through at most d of them: at most d S u however the
        roundings fall, LAMBDA sqrt(d) S u when their signs are random (LAMBDA). A kernel of your own
        that adds a row in one chain has d = n - 1."""
        chain_length = min(n - 1, math.ceil(n / 64) + 41)
        return min(chain_length, LAMBDA * math.sqrt(max(chain_length, 0)))

    def sum_of_row(self, t, t_error):
        """A row's sum of t (whose elements have errors t_error, None for none) and its error."""
        value = t.sum(-1, keepdim=True)
        return value, _per_element(t, t_error).sum(-1, keepdim=True) + self.sum_roundings(t.shape[-1]) * t.abs().sum(-1, keepdim=True)

    def mean_of_row(self, t, t_error):
        sum_value, error = self.sum_of_row(t, t_error)
        value = sum_value / t.shape[-1]
        return value, error / t.shape[-1] + self.division_error(value)

    def max_of_row(self, t, t_error):
        """|max(t~) - max(t)| is at most the largest error of the row: max and min do not round."""
        return t.amax(-1, keepdim=True), _per_element(t, t_error).amax(-1, keepdim=True)

    def min_of_row(self, t, t_error):
        return t.amin(-1, keepdim=True), _per_element(t, t_error).amax(-1, keepdim=True)

    def allowed_error(self, want, bound_in_u):
        """The error an element of the op may have: SAFETY times the bound in op-math (and in the
        float64 reference, whose own rounding the same model bounds), plus the output's rounding."""
        in_opmath = SAFETY * (self.u + 2.0**-53) * _per_element(want, bound_in_u)
        out_relative, out_absolute = OUTPUT_ROUNDING.get(self.dtype, (0.0, 0.0))
        return in_opmath + out_relative * (want.abs() + in_opmath) + out_absolute


def _per_element(t, value):
    """value (a number, None for 0, or a tensor broadcastable to t) as a tensor of t's shape."""
    return torch.broadcast_to(torch.as_tensor(0.0 if value is None else value, dtype=t.dtype, device=t.device), t.shape)


def error_bound(_m, x):
    """The bound on the rounding error of exp(x - max(x)) / sum(exp(x - max(x))), in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; the model above says what each term means)."""
    _r0, _q0 = _m.max_of_row(x, None)  # max(x)
    _t0 = x - _r0  # x - _r0
    _e0 = _q0 + _m.one_rounding(_t0)
    _t1 = torch.exp(_t0)  # exp(x - _r0)
    _e1 = _t1 * _e0 + _m.function_error('exp', _t0, _t1)
    _r1, _q1 = _m.sum_of_row(_t1, _e1)  # sum(exp(x - max(x)))
    _t2 = x - _r0  # x - _r0
    _e2 = _q0 + _m.one_rounding(_t2)
    _t3 = torch.exp(_t2)  # exp(x - _r0)
    _e3 = _t3 * _e2 + _m.function_error('exp', _t2, _t3)
    _t4 = _t3 / _r1  # exp(x - _r0) / _r1
    _e4 = _e3 / _r1.abs() + (_t4 / _r1).abs() * _q1 + _m.division_error(_t4)
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


#: Elements checked at a time (whole rows): the float64 reference and its bound hold about 20 tensors
#: of this size.
CHUNK = 2**22


def expected_and_bound(args):
    """The exact result (reference() in float64 on the same, already rounded inputs and weights) and
    the error each element of the op may have (the error model above)."""
    error_model = ErrorModel(args[0].dtype)
    exact_args = [t.double() for t in args]
    want = reference(*exact_args)
    return want, error_model.allowed_error(want, error_bound(error_model, *exact_args))


def assert_matches(out, args):
    """Asserts that every element of out is within its error bound of the exact result."""
    assert out.shape == args[0].shape
    cols = out.shape[-1]
    rows = [t.reshape(-1, cols) for t in args[:N_INPUTS]]
    got = out.reshape(-1, cols)
    rows_per_chunk = max(1, CHUNK // max(cols, 1))
    mismatches = Mismatches(out)
    for start in range(0, got.shape[0], rows_per_chunk):
        want, allowed_err = expected_and_bound([t[start:start + rows_per_chunk] for t in rows] + list(args[N_INPUTS:]))
        mismatches.check_piece(got[start:start + rows_per_chunk].reshape(-1), want.reshape(-1), allowed_err.reshape(-1), offset=start * cols)
    mismatches.check()


def _cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    if not myteam_ops.WITH_CUDA:
        return "softmax was built without CUDA (no toolkit at build time)"
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
    out = myteam_ops.softmax(*args)
    assert out.shape == args[0].shape and out.dtype == dtype and out.device == args[0].device
    assert out.is_contiguous()
    assert_matches(out, args)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(0, 7), (3, 0), (1000,), (2, 3, 33), (2, 1, 3, 129), (1333, 64)], ids=str)
def test_shapes(device, shape):
    # No rows, empty rows, a single row (1-D), batches of rows in 3-D and 4-D, and many short rows
    # (several rows per block on the GPU, the last block part-filled).
    dtype = DTYPES[0]
    args = make_args(shape, dtype, device, seed=1)
    out = myteam_ops.softmax(*args)
    assert out.shape == args[0].shape
    if out.numel():
        assert_matches(out, args)


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
            pytest.skip("softmax has no weights")
        args = make_args((rows, cols), dtype, device, seed=6)
        args[N_INPUTS:] = [torch.cat([t.new_zeros(1), t])[1:] for t in args[N_INPUTS:]]
    assert args[0].shape == (rows, cols)
    out = myteam_ops.softmax(*args)
    assert_matches(out, args)


@pytest.mark.parametrize("device", DEVICES)
def test_large_values(device):
    # Values around 1e4: a softmax that did not subtract the row's maximum first would overflow
    # (exp(1e4) is inf even in float64). Wherever the exact result is finite and op-math cannot
    # overflow on the way (the error model's bound is finite), the op must be finite and close.
    dtype = torch.float32
    args = make_args((16, 1000), dtype, device, seed=7)
    args[:N_INPUTS] = [t * 1e4 for t in args[:N_INPUTS]]
    out = myteam_ops.softmax(*args)
    assert_matches(out, args)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    args = [t.requires_grad_() for t in make_args((3, 7), torch.float64, device, seed=8)]
    assert torch.autograd.gradcheck(OP, args, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward_matches_reference(device, dtype):
    args = [t.requires_grad_() for t in make_args((9, 130), dtype, device, seed=9)]
    grad_out = make_args((9, 130), dtype, device, seed=10)[0]
    grads = torch.autograd.grad(myteam_ops.softmax(*args), args, grad_out)
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
        return myteam_ops.softmax(*ts) * 2

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
    first = myteam_ops.softmax(*args)
    for _ in range(3):
        assert torch.equal(myteam_ops.softmax(*args), first)


@pytest.mark.parametrize("device", DEVICES)
def test_error_unsupported_dtype(device):
    args = [torch.ones(2, 4, dtype=torch.int32, device=device) for _ in range(N_INPUTS)]
    args += [torch.ones(4, dtype=torch.int32, device=device) for _ in range(N_WEIGHTS)]
    with pytest.raises(RuntimeError, match=r"softmax: x has dtype Int, but softmax supports"):
        myteam_ops.softmax(*args)


@pytest.mark.parametrize("device", DEVICES)
def test_error_zero_dimensional(device):
    args = make_args((4,), DTYPES[0], device)
    args[:N_INPUTS] = [t[0] for t in args[:N_INPUTS]]
    with pytest.raises(RuntimeError, match=r"softmax: x .*0-dimensional|softmax: x needs at least one dimension"):
        myteam_ops.softmax(*args)


def test_error_sparse_input():
    args = make_args((2, 8), DTYPES[0], "cpu")
    args[0] = args[0].to_sparse()
    with pytest.raises(RuntimeError, match=r"softmax: x must be a dense tensor"):
        myteam_ops.softmax(*args)


def test_error_not_a_tensor():
    args = make_args((2, 8), DTYPES[0], "cpu")
    args[-1] = 1.5
    with pytest.raises(TypeError, match=r"softmax: x must be a torch.Tensor, got float"):
        myteam_ops.softmax(*args)


@requires_cuda
def test_runs_on_the_inputs_device_and_current_stream():
    device = f"cuda:{torch.cuda.device_count() - 1}"
    args = make_args((512, 1024), DTYPES[0], device, seed=14)
    stream = torch.cuda.Stream(device=device)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        out = myteam_ops.softmax(*args)
    stream.synchronize()
    assert out.device == torch.device(device)
    assert_matches(out, args)


@requires_cuda
def test_cuda_graph_capture():
    args = make_args((33, 4099), DTYPES[0], "cuda", seed=15)
    myteam_ops.softmax(*args)  # warm up outside the graph
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = myteam_ops.softmax(*args)
    fresh = make_args((33, 4099), DTYPES[0], "cuda", seed=16)
    for t, u in zip(args, fresh):
        t.copy_(u)
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(out, fresh)


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
    # Drawn in the dtype itself: a float64 draw of this size would need 16 GiB more than `need`.
    args = [torch.empty((rows, cols), dtype=dtype, device="cuda") for _ in range(N_INPUTS)]
    for tensor in args:
        tensor.uniform_(0.5, 2.5, generator=generator)
    args += [_sample((cols,), dtype, "cuda", generator) for _ in range(N_WEIGHTS)]
    out = myteam_ops.softmax(*args)
    boundary = 2**31 // cols
    for start, stop in [(0, 4), (boundary - 2, boundary + 2), (rows - 4, rows)]:
        window = [t[start:stop] for t in args[:N_INPUTS]] + args[N_INPUTS:]
        assert_matches(out[start:stop], window)
