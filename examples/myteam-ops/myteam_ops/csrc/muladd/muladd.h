#pragma once
// muladd.h: the scalar formula of myteam::muladd, shared by the CPU loop
// (muladd.cpp) and the CUDA kernel (cuda/muladd_kernel.cu), so that both backends compute
// exactly the same thing. Keep ATen out of this header: the kernel's compile time depends on it.

#include "../opmath.h"

namespace muladd {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "a * b + c".
// acc_t is the op-math type: float for float16, bfloat16 and float32 inputs (each element is
// widened once, computed in float, and rounded once when stored), double for float64. The CUDA
// kernel computes float16 and bfloat16 in opmath::fast_float, a float whose division and exp are the
// fast approximate ones (their errors are far below 16-bit rounding; see ../opmath.h). Write
// numbers as acc_t(0.5), as the generated line does, and call opmath:: functions: one expression then
// compiles for every acc_t (a bare 0.5f beside an acc_t in `c ? x : 0.5f` or std::max does not).
// If you change the formula, change reference() in ops/muladd.py to match: the tests compare against it
// and the default backward is derived from it.
template <typename acc_t>
OPMATH_FN acc_t muladd_expr(acc_t a, acc_t b, acc_t c) {
  return a * b + c;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// The backward: the gradient of each input given the gradient _grad of the output,
// _d[0] = _grad * dmuladd/da, _d[1] = _grad * dmuladd/db, _d[2] = _grad * dmuladd/dc, written by kernelgen from the expression
// above (its symbolic derivatives; a term they share is computed once). The CPU loop and the CUDA
// kernel of muladd_backward both call it. If you change muladd_expr, change this to match:
// the tests compare it with the exact gradients of reference().
template <typename acc_t>
OPMATH_FN void muladd_grad(acc_t _grad, acc_t a, acc_t b, acc_t c, acc_t (&_d)[3]) {
  _d[0] = _grad * b;
  _d[1] = _grad * a;
  _d[2] = _grad;
}

}  // namespace muladd
