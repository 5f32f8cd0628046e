#pragma once
// muladd_checks.h: the input checks, defined in muladd.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include "../stable_utils.h"

namespace muladd {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype and all share one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& a, const kernelgen::Tensor& b, const kernelgen::Tensor& c);

}  // namespace muladd
