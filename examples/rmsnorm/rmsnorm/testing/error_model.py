"""The error model of rmsnorm's tests: how far from the exact result a correct kernel may be.

The tests compare an op with its reference() evaluated in float64 on the same, already rounded inputs,
which stands for the exact result. The error a correct kernel may have is not one rtol/atol per dtype:
it is bounded per element from the expression itself. Each op's test file holds an error_bound()
function, written by kernelgen from the parsed expression: a first-order running error bound. Walking
the expression in float64, each step passes on its operands' errors, scaled by its derivative, and adds
its own rounding (u times the size of its result). A function takes its largest slope within its
argument's error (the mean value theorem), not only the slope at the exact argument: cos of an argument
that op-math holds only to whole radians may be anything in [-1, 1], even where sin of it is 0. A large intermediate (cancellation) or a steep
function widens the bound exactly where the kernel's rounding can grow, and a well-conditioned
expression keeps a tight one, so the tests neither fail a correct kernel nor let a wrong one through by
chance. Functions add their documented error (FUNCTION_ULPS); a row reduction adds the rounding of a
sum of the row's length (ErrorModel.sum_roundings); a matmul's dot product of length K adds the rounding
of its K products and partial sums (ErrorModel.dot_error); the result adds one rounding to the output
dtype (OUTPUT_ROUNDING).
"""

from __future__ import annotations

import math

import torch

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
#: The CUDA C++ kernels compute float16 and bfloat16 in opmath::fast_float (csrc/opmath.h): exp is
#: __expf (2 + 1.173 |x| ulps), division is fast_divide (2 ulps, 3 with a reciprocal's product), and
#: pow(x, y) is __expf(y * logf(x)) for a finite x > 0, powf otherwise: 4 + 2 |log2 pow(x, y)| ulps
#: (__expf's error at t = y log(x) and t's own rounding, 2 + 1.86 |log2 pow(x, y)|; for pow, |x| in an
#: entry is |log2| of the result).
FAST_FLOAT = {**ACCURATE_FLOAT, "exp": (2, 1.173, 0.0), "/": 3, "pow": (4, 2.0, 0.0)}
#: Triton's float32 math: tl.exp is ex2.approx (as __expf: 2 + 1.173 |x| ulps), tl.log is lg2.approx
#: (as __logf: 3 ulps, and 2**-21.41 absolutely near 1), tl.rsqrt is rsqrt.approx, and / is div.full.f32
#: (2 ulps); tanh, sin, cos, erf and pow are libdevice's accurate ones. float64 is libdevice throughout.
APPROXIMATE_FLOAT = {**ACCURATE_FLOAT, "exp": (2, 1.173, 0.0), "log": (3, 0.0, 2.0**-21.41), "/": 3}
#: Per backend and dtype, the table the bound uses.
FUNCTION_ULPS = {
    "cuda": {torch.float32: ACCURATE_FLOAT, torch.float64: ACCURATE_DOUBLE,
             torch.float16: FAST_FLOAT, torch.bfloat16: FAST_FLOAT},
    "triton": {torch.float32: APPROXIMATE_FLOAT, torch.float64: ACCURATE_DOUBLE,
               torch.float16: APPROXIMATE_FLOAT, torch.bfloat16: APPROXIMATE_FLOAT},
}


class ErrorModel:
    """What the bound counts for one dtype and backend, in units of op-math's unit roundoff u: an op's
    error_bound() calls these methods for each step of its expression. (Their names are long on purpose:
    the generated code's identifiers are names an input cannot have.)"""

    def __init__(self, dtype, backend="cuda"):
        self.dtype = dtype
        self.backend = backend
        self.opmath = torch.float64 if dtype == torch.float64 else torch.float32
        info = torch.finfo(self.opmath)
        self.u = info.eps / 2
        self.tiny = info.tiny / self.u  # an underflow, or a flush to zero, loses up to the smallest normal number
        self.largest = info.max
        self.ulps = FUNCTION_ULPS[backend][dtype]
        # The rows a weight's gradient sums over (sum_of_column), where a test computes its bound a piece of
        # rows at a time; None: the rows of the piece given.
        self.column_rows = None

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
        # pow's error grows with |log2| of its result (ln 2 times the exponent y * log(x) that __expf
        # exponentiates); clamped at 160, above any nonzero finite float's
        at = torch.log2(y.abs()).abs().clamp(max=160.0) if func == "pow" else x
        count, abs_floor = self._ulps_of("exp" if func == "sigmoid" else func, at)
        if func == "sigmoid":
            # 1 / (1 + e), e = exp(-x): e's relative error reaches y scaled by e / (1 + e) = 1 - y; then
            # the rounding of 1 + e and the division's
            count = count * (1 - y) + 0.5 + self._ulps_of("/", x)[0]
        return 2 * count * y.abs() + abs_floor + self.tiny

    def product_of_errors(self, ea, eb):
        """The second-order part of a product's error, ea eb u (a * b's first-order part, |b| ea + |a| eb,
        vanishes where a and b do): all there is of (x - min(x)) ** 2 at a row of one element, where the
        kernel's x - min(x) is the rounding of x, not 0 (an FMA computes x's product exactly there)."""
        return ea * eb * self.u

    def division_error(self, q):
        return 2 * self._ulps_of("/", q)[0] * q.abs() + self.tiny

    def power_error(self, x, p, y):
        """The own error of y = x ** p for a number p: sqrt for 0.5; multiplications for a whole p (CUDA
        C++: up to 16, |p| - 1 roundings and a division for a negative p; Triton: 2, 3 and 4, and a
        division for -1); pow otherwise, and p's own rounding."""
        if p == 0.5:
            return self.function_error("sqrt", x, y)
        if self.backend == "triton":
            if p in (2, 3, 4):
                return (p - 1) * self.one_rounding(y)
            if p == -1:
                return self.division_error(y)
        elif p == int(p) and abs(p) <= 16:
            return (abs(p) - 1) * self.one_rounding(y) + (self.division_error(y) if p < 0 else 0.0)
        return self.function_error("pow", x, y) + (y * torch.log(x)).abs() * self.literal_rounding(p)

    def larger_error(self, first, second):
        return torch.maximum(torch.as_tensor(first), torch.as_tensor(second))

    def tie_step_error(self, a, b, bound_in_u):
        """A derivative's step ([a > b], [a == b]: the gradients of abs, min and max) is exact wherever
        the kernel's operands compare as the exact ones do. Within their error bounds of a tie they may
        compare the other way (x / (|y| + 1) rounds onto z in max(x / (|y| + 1), z), say), and then the
        gradient may go to either side, or half to each: the step may be off by 1 there (1 / u), and is
        exact elsewhere."""
        gap = torch.as_tensor(a - b).abs()
        return (gap <= SAFETY * (self.u + 2.0**-53) * per_element(gap, bound_in_u)).double() / self.u

    # ---- row reductions (rowwise ops) ----

    def sum_roundings(self, n):
        """The roundings of a row's sum of n terms, in units of u times the sum of their magnitudes. The
        kernels of this package add a row in chains of at most d = ceil(n / 64) + 41 additions: the CPU
        loop in 64 lanes (n / 64 each, then 6 pairwise levels), the CUDA kernel up to 32 elements per
        thread then 9 levels of shuffles (5 more across the blocks of a cluster for rows longer than
        16384; n / 512 per thread in the multi-pass kernel), Triton in a tree (n / 4096 per lane for
        long rows). Every rounding is u times a partial sum, none larger than the sum S of
        the terms' magnitudes, and a term passes through at most d of them: at most d S u however the
        roundings fall, LAMBDA sqrt(d) S u when their signs are random (LAMBDA). A kernel of your own
        that adds a row in one chain has d = n - 1."""
        chain_length = min(n - 1, math.ceil(n / 64) + 41)
        return min(chain_length, LAMBDA * math.sqrt(max(chain_length, 0)))

    def sum_of_row(self, t, t_error):
        """A row's sum of t (whose elements have errors t_error, None for none) and its error."""
        value = t.sum(-1, keepdim=True)
        return value, per_element(t, t_error).sum(-1, keepdim=True) + self.sum_roundings(t.shape[-1]) * t.abs().sum(-1, keepdim=True)

    def mean_of_row(self, t, t_error):
        sum_value, error = self.sum_of_row(t, t_error)
        value = sum_value / t.shape[-1]
        return value, error / t.shape[-1] + self.division_error(value)

    def max_of_row(self, t, t_error):
        """|max(t~) - max(t)| is at most the largest error of the row: max and min do not round."""
        return t.amax(-1, keepdim=True), per_element(t, t_error).amax(-1, keepdim=True)

    def min_of_row(self, t, t_error):
        return t.amin(-1, keepdim=True), per_element(t, t_error).amax(-1, keepdim=True)

    def sum_of_column(self, t, t_error, like):
        """A weight's gradient: the sums over the rows (the first dimension of `like`) of its per-element
        contributions t, whose elements have errors t_error, and their errors. The backward kernels add a
        column in chains of at most n - 1 additions for n rows (each slot of rows adds its rows in order, the
        multi-pass kernel a group of rows at a time, then the slots' partial sums are added), with the same rounding analysis as sum_roundings. With
        column_rows set, `like` is a piece of the rows and n is column_rows: both results are sums over the
        rows, so the pieces' results add up to the whole column's."""
        t = torch.broadcast_to(torch.as_tensor(t, dtype=like.dtype, device=like.device), like.shape)
        chain_length = max((t.shape[0] if self.column_rows is None else self.column_rows) - 1, 0)
        roundings = min(chain_length, LAMBDA * math.sqrt(chain_length))
        return t.sum(0), per_element(t, t_error).sum(0) + roundings * t.abs().sum(0)

    # ---- the dot product (matmul ops) ----

    def stored_rounding(self, t):
        """The rounding of t (in op-math) to the op's dtype where a kernel stores a value that is read
        again, in units of u: a matmul's accumulator for its backward, and the epilogue's derivative that
        the backward's products read. Zero for float32 and float64, whose stored values are op-math's."""
        out_relative, out_absolute = OUTPUT_ROUNDING.get(self.dtype, (0.0, 0.0))
        return (out_relative * t.abs() + out_absolute) / self.u

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
        in_opmath = SAFETY * (self.u + 2.0**-53) * per_element(want, bound_in_u)
        out_relative, out_absolute = OUTPUT_ROUNDING.get(self.dtype, (0.0, 0.0))
        return in_opmath + out_relative * (want.abs() + in_opmath) + out_absolute


def per_element(t, value):
    """value (a number, None for 0, or a tensor broadcastable to t) as a tensor of t's shape."""
    return torch.broadcast_to(torch.as_tensor(0.0 if value is None else value, dtype=t.dtype, device=t.device), t.shape)


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
                f"{excess_ratio:.3g} times its bound {allowed_err:.3g} (the op's error_bound() and "
                f"{__name__})")
