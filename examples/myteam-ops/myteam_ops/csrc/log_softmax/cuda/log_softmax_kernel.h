#pragma once
// log_softmax_kernel.h: the interface between the tensor code (log_softmax_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (log_softmax_kernel.cu, compiled by nvcc
// without it). Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace log_softmax {

// For each of `rows` rows of `cols` elements (contiguous, row-major, cols >= 1): out[row, :] = the expression of log_softmax.h over that row.
// rows >= 1. Launched on `stream`. Instantiated in log_softmax_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_log_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                       cudaStream_t stream);

}  // namespace log_softmax
