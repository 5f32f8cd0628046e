#pragma once
// gelu_kernel.h: the interface between the tensor code (gelu_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (gelu_kernel.cu, compiled by nvcc
// without it).
// Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gelu {

// out[i] = gelu_expr(x[i]) for i in [0, n): contiguous arrays of n
// elements, n >= 1, launched on `stream`. Instantiated in gelu_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_gelu(const scalar_t* x, scalar_t* out, int64_t n, cudaStream_t stream);

// _grad_x[i], ... = gelu_grad(_grad[i], x[i]) for i in [0, n), one pass; a
// null _grad_<input> is a gradient not asked for (not written). Instantiated like launch_gelu.
template <typename scalar_t>
void launch_gelu_backward(const scalar_t* _grad, const scalar_t* x, scalar_t* _grad_x, int64_t n,
                         cudaStream_t stream);

}  // namespace gelu
