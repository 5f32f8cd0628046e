#pragma once
// softmax_checks.h: the input checks, defined in softmax.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <vector>

#include "../stable_utils.h"

namespace softmax {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype, at least one dimension (the row) and all share
// one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& x);

// check_inputs, and that the output's gradient _grad has the inputs' shape, dtype and device and _needs
// holds one flag per input and weight: the checks of softmax_backward.
void check_backward_inputs(const kernelgen::Tensor& _grad, const kernelgen::Tensor& x, const std::vector<bool>& _needs);

}  // namespace softmax
