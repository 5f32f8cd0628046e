#pragma once
// linear_gelu_problem.h: the problem size and the epilogue, shared by the tensor code, the CPU loop and
// the kernels (no ATen here: the kernels' compile time depends on it).

#include <cstdint>

#include "../opmath.h"

namespace linear_gelu {

// The problem size of C = A @ B: A is [batch,] M x K, B is [batch,] K x N.
struct Problem {
  int64_t batch;  // 1 for 2-D inputs
  int64_t m, n, k;
};

// ---- EDIT HERE: the epilogue ------------------------------------------------------------------
// Generated from --epilogue "(acc + bias) * sigmoid(1.702 * (acc + bias))". Every element of the output is
// linear_gelu_epilogue(acc, bias), applied where the product is stored: acc is the element of A @ B
// in op-math precision (float for float16, bfloat16 and float32 inputs, double for float64),
// bias the element of the 1-D bias for the element's column. The result is rounded once to the
// output's dtype. Fusing it here saves the round trip of C through memory that a separate op costs.
// If you change it, change reference() in ops/linear_gelu.py to match: the tests compare against it,
// and change linear_gelu_epilogue_grad below.
template <typename acc_t>
OPMATH_FN acc_t linear_gelu_epilogue(acc_t acc, acc_t bias) {
  return (acc + bias) * opmath::sigmoid(acc_t(1.702) * (acc + bias));
}

// The backward of the epilogue, written by kernelgen from the expression above (its symbolic
// derivatives), given the gradient _grad of one output element:
//   _d[0] = _grad * d out / d acc: the element of dacc, the matrix the backward's two products read,
//           dL/dA = dacc @ B^T and dL/dB = A^T @ dacc;
//   _d[1] = _grad * d out / d bias: the element's contribution to dL/dbias, which sums them over the rows.
// acc is the accumulator as the training forward stored it (rounded to the inputs' dtype, as a separate
// matmul would round it). The forward stores it because these derivatives read it.
template <typename acc_t>
OPMATH_FN void linear_gelu_epilogue_grad(acc_t _grad, acc_t acc, acc_t bias, acc_t (&_d)[2]) {
  const acc_t _t0 = acc + bias;
  const acc_t _t1 = opmath::sigmoid(acc_t(1.702) * _t0);
  const acc_t _t2 = _grad * (_t1 + acc_t(1.702) * (_t0 * (_t1 * (acc_t(1.0) - _t1))));
  _d[0] = _t2;
  _d[1] = _t2;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// What the package's matrix-product kernels (../kernelgen/gemm.cuh, gemm_sm90.cuh) need to know of this op:
// whether it takes a bias, its epilogue, and the epilogue's backward.
struct Op {
  static constexpr bool kBias = true;
  // Whether the training forward also stores the accumulator (rounded to the inputs' dtype) for the
  // backward: the epilogue's derivatives read it.
  static constexpr bool kSavesAcc = true;
  template <typename T>
  static OPMATH_FN T epilogue(T acc, T bias) {
    return linear_gelu_epilogue<T>(acc, bias);
  }
  // The gradients at one element: d[0] for acc, d[1] for the bias.
  static constexpr int kGrads = 2;
  // Whether the epilogue's math is heavy (kernelgen's estimate: math cost 23, not above its threshold
  // of 28). A heavy epilogue's backward kernel loads one row at a time (bwd::kRowsPerStep in gemm.cuh).
  static constexpr bool kHeavy = false;
  template <typename T>
  static OPMATH_FN void grads(T grad, T acc, T bias, T (&d)[kGrads]) {
    linear_gelu_epilogue_grad<T>(grad, acc, bias, d);
  }
};

}  // namespace linear_gelu
