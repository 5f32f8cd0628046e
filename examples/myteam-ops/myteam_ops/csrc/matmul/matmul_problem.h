#pragma once
// matmul_problem.h: the problem size and the epilogue, shared by the tensor code, the CPU loop and
// the kernels (no ATen here: the kernels' compile time depends on it).

#include <cstdint>

#include "../opmath.h"

namespace matmul {

// The problem size of C = A @ B: A is [batch,] M x K, B is [batch,] K x N.
struct Problem {
  int64_t batch;  // 1 for 2-D inputs
  int64_t m, n, k;
};

// ---- EDIT HERE: the epilogue ------------------------------------------------------------------
// Generated from --epilogue "acc". Every element of the output is
// matmul_epilogue(acc), applied where the product is stored: acc is the element of A @ B
// in op-math precision (float for float16, bfloat16 and float32 inputs, double for float64). The result is rounded once to the
// output's dtype. Fusing it here saves the round trip of C through memory that a separate op costs.
// If you change it, change reference() in ops/matmul.py to match: the tests compare against it// and the default backward is derived from it.
template <typename acc_t>
OPMATH_FN acc_t matmul_epilogue(acc_t acc) {
  return acc;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// What the package's matrix-product kernels (../kernelgen/gemm.cuh, gemm_sm90.cuh) need to know of this op:
// whether it takes a bias, its epilogue.
struct Op {
  static constexpr bool kBias = false;
  // Whether the training forward also stores the accumulator (rounded to the inputs' dtype) for the
  // backward.
  static constexpr bool kSavesAcc = false;
  template <typename T>
  static OPMATH_FN T epilogue(T acc) {
    return matmul_epilogue<T>(acc);
  }
};

}  // namespace matmul
