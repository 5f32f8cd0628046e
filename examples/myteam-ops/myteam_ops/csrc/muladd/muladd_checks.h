#pragma once
// muladd_checks.h: the input checks, defined in muladd.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include <ATen/core/Tensor.h>

namespace muladd {

// Throws c10::Error (RuntimeError in Python), with a message that names the offending argument,
// unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c);

}  // namespace muladd
