#pragma once
// silu_mul.h: the scalar formula of myteam::silu_mul, shared by the CPU loop
// (silu_mul.cpp) and the CUDA kernel (cuda/silu_mul_kernel.cu), so that both backends compute
// exactly the same thing. Keep ATen out of this header: the kernel's compile time depends on it.

#include "../opmath.h"

namespace silu_mul {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "x * sigmoid(x) * y".
// acc_t is the op-math type: float for float16, bfloat16 and float32 inputs (each element is
// widened once, computed in float, and rounded once when stored), double for float64. The CUDA
// kernel computes float16 and bfloat16 in opmath::fast_float, a float whose division and exp are the
// fast approximate ones (their errors are far below 16-bit rounding; see ../opmath.h). Write
// numbers as acc_t(0.5), as the generated line does, and call opmath:: functions: one expression then
// compiles for every acc_t (a bare 0.5f beside an acc_t in `c ? x : 0.5f` or std::max does not).
// If you change the formula, change reference() in ops/silu_mul.py to match: the tests compare against it
// and the default backward is derived from it.
template <typename acc_t>
OPMATH_FN acc_t silu_mul_expr(acc_t x, acc_t y) {
  return x * opmath::sigmoid(x) * y;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// The backward: the gradient of each input given the gradient _grad of the output,
// _d[0] = _grad * dsilu_mul/dx, _d[1] = _grad * dsilu_mul/dy, written by kernelgen from the expression
// above (its symbolic derivatives; a term they share is computed once). The CPU loop and the CUDA
// kernel of silu_mul_backward both call it. If you change silu_mul_expr, change this to match:
// the tests compare it with the exact gradients of reference().
template <typename acc_t>
OPMATH_FN void silu_mul_grad(acc_t _grad, acc_t x, acc_t y, acc_t (&_d)[2]) {
  const acc_t _t0 = opmath::sigmoid(x);
  _d[0] = _grad * ((_t0 + x * (_t0 * (acc_t(1.0) - _t0))) * y);
  _d[1] = _grad * (x * _t0);
}

}  // namespace silu_mul
