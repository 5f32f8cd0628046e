#pragma once
// silu_mul_kernel.h: the interface between the tensor code (silu_mul_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (silu_mul_kernel.cu, compiled by nvcc
// without it).
// Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace silu_mul {

// out[i] = silu_mul_expr(x[i], y[i]) for i in [0, n): contiguous arrays of n
// elements, n >= 1, launched on `stream`. Instantiated in silu_mul_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_silu_mul(const scalar_t* x, const scalar_t* y, scalar_t* out, int64_t n, cudaStream_t stream);

// _grad_x[i], ... = silu_mul_grad(_grad[i], x[i], y[i]) for i in [0, n), one pass; a
// null _grad_<input> is a gradient not asked for (not written). Instantiated like launch_silu_mul.
template <typename scalar_t>
void launch_silu_mul_backward(const scalar_t* _grad, const scalar_t* x, const scalar_t* y, scalar_t* _grad_x, scalar_t* _grad_y, int64_t n,
                             cudaStream_t stream);

}  // namespace silu_mul
