#pragma once
// silu_mul_checks.h: the input checks, defined in silu_mul.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <ATen/core/Tensor.h>

namespace silu_mul {

// Throws c10::Error (RuntimeError in Python), with a message that names the offending argument,
// unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const at::Tensor& x, const at::Tensor& y);

}  // namespace silu_mul
