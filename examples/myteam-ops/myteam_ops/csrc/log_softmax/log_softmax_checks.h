#pragma once
// log_softmax_checks.h: the input checks, defined in log_softmax.cpp and called by the CPU and
// CUDA implementations before they touch any data.

#include "../stable_utils.h"

namespace log_softmax {

// Throws std::runtime_error (RuntimeError in Python), with a message that names the offending
// argument, unless the inputs have a supported dtype, at least one dimension (the row) and all share
// one device, dtype and shape.
void check_inputs(const kernelgen::Tensor& x);

}  // namespace log_softmax
