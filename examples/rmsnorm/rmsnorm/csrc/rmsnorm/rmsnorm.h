#pragma once
// rmsnorm.h: the formula of rmsnorm::rmsnorm, in the order it is evaluated, shared by the CPU
// loop (rmsnorm.cpp) and the CUDA kernel (cuda/rmsnorm_kernel.cu), so that both backends compute
// exactly the same thing. Keep tensor headers out of this file: the kernel includes it.

#include "../opmath.h"

namespace rmsnorm {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "x * rsqrt(mean(x * x) + 1e-06) * w".
//
// A row is the last dimension of the input; the weight w has one value per
// column, the same for every row. The expression is evaluated in 2 steps: each distinct
// reduction once, inner ones first, then the output, elementwise. _r[k] is the value of
// reduction k for the current row. acc_t is the op-math type: float for float16, bfloat16 and
// float32 inputs, double for float64. The reductions accumulate in it too.
//
// If you change the formula, change reference() in ops/rmsnorm.py to match: the tests compare
// against it and the default backward is derived from it.
constexpr int kReductions = 1;

// _r[0] = mean(x * x): Reduce0 folds rmsnorm_reduce0_arg over the row, then kMean0 divides by the row length.
template <typename acc_t>
using Reduce0 = opmath::SumOp<acc_t>;
constexpr bool kMean0 = true;
template <typename acc_t>
OPMATH_FN acc_t rmsnorm_reduce0_arg(acc_t x, acc_t w, const acc_t* _r) {
  return x * x;
}

// The output, element by element.
template <typename acc_t>
OPMATH_FN acc_t rmsnorm_out(acc_t x, acc_t w, const acc_t* _r) {
  return x * opmath::rsqrt(_r[0] + acc_t(1e-06)) * w;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

}  // namespace rmsnorm
