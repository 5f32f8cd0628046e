#pragma once
// silu_mul_checks.h: the input checks, defined in silu_mul.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <vector>

#include "../stable_utils.h"

namespace silu_mul {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& x, const kernelgen::Tensor& y);

// The same for silu_mul_backward: the inputs as above, the output's gradient of their shape, dtype
// and device, and one flag per input in `_needs`.
void check_backward_inputs(const kernelgen::Tensor& _grad, const kernelgen::Tensor& x, const kernelgen::Tensor& y, const std::vector<bool>& _needs);

}  // namespace silu_mul
