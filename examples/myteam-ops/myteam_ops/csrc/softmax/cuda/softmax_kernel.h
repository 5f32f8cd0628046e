#pragma once
// softmax_kernel.h: the interface between the tensor code (softmax_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (softmax_kernel.cu, compiled by nvcc
// without it). Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace softmax {

// For each of `rows` rows of `cols` elements (contiguous, row-major, cols >= 1): out[row, :] = the expression of softmax.h over that row.
// rows >= 1. Launched on `stream`. Instantiated in softmax_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                   cudaStream_t stream);

}  // namespace softmax
