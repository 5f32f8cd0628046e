#pragma once
// silu_mul_checks.h: the input checks, defined in silu_mul.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include "../stable_utils.h"

namespace silu_mul {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& x, const kernelgen::Tensor& y);

}  // namespace silu_mul
