#pragma once
// gelu_checks.h: the input checks, defined in gelu.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <ATen/core/Tensor.h>

namespace gelu {

// Throws c10::Error (RuntimeError in Python), with a message that names the offending argument,
// unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const at::Tensor& x);

}  // namespace gelu
