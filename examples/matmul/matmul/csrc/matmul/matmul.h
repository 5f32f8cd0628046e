#pragma once
// matmul.h: what the CPU (matmul.cpp) and CUDA (cuda/matmul_cuda.cpp) halves of
// matmul::matmul share on the tensor side.

#include <ATen/core/Tensor.h>

#include "matmul_problem.h"

namespace matmul {

// Throws c10::Error (RuntimeError in Python) naming the shapes, unless A and B are 2-D (or both
// 3-D with equal batch sizes), A's columns match B's rows, and they share a supported dtype and a
// device. Defined in matmul.cpp, called by both backends.
Problem check_inputs(const at::Tensor& a, const at::Tensor& b);

// The output, allocated like the inputs: [batch,] M x N, contiguous.
at::Tensor empty_output(const at::Tensor& a, const Problem& p);

}  // namespace matmul
