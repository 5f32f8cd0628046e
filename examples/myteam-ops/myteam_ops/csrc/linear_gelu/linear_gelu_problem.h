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
// If you change it, change reference() in ops/linear_gelu.py to match: the tests compare against it
// and the default backward is derived from it.
template <typename acc_t>
OPMATH_FN acc_t linear_gelu_epilogue(acc_t acc, acc_t bias) {
  return (acc + bias) * opmath::sigmoid(acc_t(1.702) * (acc + bias));
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// What the package's matrix-product kernels (../kernelgen/gemm.cuh, gemm_sm90.cuh) need to know of this op:
// whether it takes a bias, and its epilogue.
struct Op {
  static constexpr bool kBias = true;
  template <typename T>
  static OPMATH_FN T epilogue(T acc, T bias) {
    return linear_gelu_epilogue<T>(acc, bias);
  }
};

}  // namespace linear_gelu
