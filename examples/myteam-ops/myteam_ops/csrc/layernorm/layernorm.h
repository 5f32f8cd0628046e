#pragma once
// layernorm.h: the formula of myteam::layernorm, in the order it is evaluated, shared by the CPU
// loop (layernorm.cpp) and the CUDA kernel (cuda/layernorm_kernel.cu), so that both backends compute
// exactly the same thing. Keep tensor headers out of this file: the kernel includes it.

#include "../opmath.h"

namespace layernorm {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2.0) + 1e-05) * w + b".
//
// A row is the last dimension of the input; the weights w, b have one value per
// column, the same for every row. The expression is evaluated in 3 steps: each distinct
// reduction once, inner ones first, then the output, elementwise. _r[k] is the value of
// reduction k for the current row. acc_t is the op-math type: float for float16, bfloat16 and
// float32 inputs, double for float64. The reductions accumulate in it too.
//
// If you change the formula, change reference() in ops/layernorm.py to match: the tests compare
// against it and the default backward is derived from it.
constexpr int kReductions = 2;

// _r[0] = mean(x): Reduce0 folds layernorm_reduce0_arg over the row, then kMean0 divides by the row length.
template <typename acc_t>
using Reduce0 = opmath::SumOp<acc_t>;
constexpr bool kMean0 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_reduce0_arg(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return x;
}

// _r[1] = mean((x - mean(x)) ** 2.0): Reduce1 folds layernorm_reduce1_arg over the row, then kMean1 divides by the row length.
template <typename acc_t>
using Reduce1 = opmath::SumOp<acc_t>;
constexpr bool kMean1 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_reduce1_arg(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return opmath::square(x - _r[0]);
}

// The output, element by element.
template <typename acc_t>
OPMATH_FN acc_t layernorm_out(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return (x - _r[0]) * opmath::rsqrt(_r[1] + acc_t(1e-05)) * w + b;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

}  // namespace layernorm
