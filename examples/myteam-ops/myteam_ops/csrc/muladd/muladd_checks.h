#pragma once
// muladd_checks.h: the input checks, defined in muladd.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <vector>

#include "../stable_utils.h"

namespace muladd {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& a, const kernelgen::Tensor& b, const kernelgen::Tensor& c);

// The same for muladd_backward: the inputs as above, the output's gradient of their shape, dtype
// and device, and one flag per input in `_needs`.
void check_backward_inputs(const kernelgen::Tensor& _grad, const kernelgen::Tensor& a, const kernelgen::Tensor& b, const kernelgen::Tensor& c, const std::vector<bool>& _needs);

}  // namespace muladd
