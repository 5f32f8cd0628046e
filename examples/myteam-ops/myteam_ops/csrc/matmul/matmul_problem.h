#pragma once
// matmul_problem.h: the problem size, shared by the tensor code and the kernels (no ATen here:
// the kernels' compile time depends on it).

#include <cstdint>

namespace matmul {

// The problem size of C = A @ B: A is [batch,] M x K, B is [batch,] K x N.
struct Problem {
  int64_t batch;  // 1 for 2-D inputs
  int64_t m, n, k;
};

}  // namespace matmul
