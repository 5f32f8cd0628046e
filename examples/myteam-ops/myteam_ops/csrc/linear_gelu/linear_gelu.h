#pragma once
// linear_gelu.h: what the CPU (linear_gelu.cpp) and CUDA (cuda/linear_gelu_cuda.cpp) halves of
// myteam::linear_gelu share on the tensor side.

#include <cstdint>
#include <vector>

#include "../stable_utils.h"
#include "linear_gelu_problem.h"

namespace linear_gelu {

// Throws std::runtime_error (RuntimeError in Python) naming the shapes, unless A and B are 2-D (or
// both 3-D with equal batch sizes), A's columns match B's rows, the bias is 1-D of N, and they share
// a supported dtype and a device. Defined in linear_gelu.cpp, called by both backends.
Problem check_inputs(const kernelgen::Tensor& a, const kernelgen::Tensor& b, const kernelgen::Tensor& bias);

// The output, allocated like the inputs: [batch,] M x N, contiguous.
kernelgen::Tensor empty_output(const kernelgen::Tensor& a, const Problem& p);

// The backward's checks (both backends): _needs has one flag per gradient (dacc, the bias's), the
// gradient is 2-D or 3-D of a supported dtype, acc has its shape, dtype and device, the bias is 1-D of N
// with its dtype and device. Returns N, the gradient's last dimension.
int64_t check_backward_inputs(const kernelgen::Tensor& _grad, const kernelgen::Tensor& acc, const kernelgen::Tensor& bias,
                              const std::vector<bool>& _needs);

// The backward's outputs that _needs asks for, allocated like _grad: dacc (the gradient's shape) and the bias's
// gradient (N; zeroed when there are no rows: a sum over none). *rows is set to the gradient's rows
// (batch * M). Both backends call it after check_backward_inputs.
std::vector<kernelgen::Tensor> empty_backward_outputs(const kernelgen::Tensor& _grad, const std::vector<bool>& _needs,
                                                      int64_t n, int64_t* rows);

}  // namespace linear_gelu
