#pragma once
// layernorm_kernel.h: the interface between the tensor code (layernorm_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (layernorm_kernel.cu, compiled by nvcc
// without it). Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace layernorm {

// For each of `rows` rows of `cols` elements (contiguous, row-major, cols >= 1; the weights are
// contiguous arrays of `cols` elements): out[row, :] = the expression of layernorm.h over that row.
// rows >= 1. Launched on `stream`. Instantiated in layernorm_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_layernorm(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t rows, int64_t cols,
                     cudaStream_t stream);

}  // namespace layernorm
