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
// against it and the default backward is derived from it. If a step comes to read another input or
// weight, mark it in Op::kReads below: the CUDA kernels pass 0 for a column a step does not read.
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

// What the package's rowwise kernels (CPU and CUDA) need to know of this op. Its columns are the input, then the weights:
// x (0), w (1), b (2).
struct Op {
  static constexpr int kInputs = 1;
  static constexpr int kWeights = 2;
  static constexpr int kReductions = layernorm::kReductions;
  // The math type: float for float16, bfloat16 and float32, double for float64. The reductions
  // accumulate in it too.
  template <typename scalar_t>
  using math_t = opmath::opmath_type<scalar_t>;
  template <int R, typename acc_t>
  using Reduce = opmath::Nth<R, Reduce0<acc_t>, Reduce1<acc_t>>;
  static constexpr bool kMean[kReductions] = {kMean0, kMean1};
  // The columns each step reads: the kernels load a weight only where a step reads it.
  static constexpr bool kReads[kReductions + 1][3] = {
      {true, false, false},  // _r[0] = mean(x)
      {true, false, false},  // _r[1] = mean((x - mean(x)) ** 2.0)
      {true, true, true},  // the output
  };
  static constexpr int kKept = -1;  // the output evaluates its own terms

  // Step R's argument at one element: v holds the columns' values, r the reductions so far.
  template <int R, typename acc_t>
  static OPMATH_FN acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return layernorm_reduce0_arg<acc_t>(v[0], v[1], v[2], r);
    } else {
      return layernorm_reduce1_arg<acc_t>(v[0], v[1], v[2], r);
    }
  }
  // The output at one element; `kept` is reduction kKept's argument there.
  template <typename acc_t>
  static OPMATH_FN acc_t out(const acc_t* v, acc_t kept, const acc_t* r) {
    return layernorm_out<acc_t>(v[0], v[1], v[2], r);
  }
};

}  // namespace layernorm
