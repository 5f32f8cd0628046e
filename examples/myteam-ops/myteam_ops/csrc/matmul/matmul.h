#pragma once
// matmul.h: what the CPU (matmul.cpp) and CUDA (cuda/matmul_cuda.cpp) halves of
// myteam::matmul share on the tensor side.

#include "../stable_utils.h"
#include "matmul_problem.h"

namespace matmul {

// Throws std::runtime_error (RuntimeError in Python) naming the shapes, unless A and B are 2-D (or
// both 3-D with equal batch sizes), A's columns match B's rows, and they share a supported dtype
// and a device. Defined in matmul.cpp, called by both backends.
Problem check_inputs(const kernelgen::Tensor& a, const kernelgen::Tensor& b);

// The output, allocated like the inputs: [batch,] M x N, contiguous.
kernelgen::Tensor empty_output(const kernelgen::Tensor& a, const Problem& p);

}  // namespace matmul
