#pragma once
// muladd_kernel.h: the interface between the tensor code (muladd_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (muladd_kernel.cu, compiled by nvcc
// without it).
// Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace muladd {

// out[i] = muladd_expr(a[i], b[i], c[i]) for i in [0, n): contiguous arrays of n
// elements, n >= 1, launched on `stream`. Instantiated in muladd_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_muladd(const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* out, int64_t n, cudaStream_t stream);

// _grad_a[i], ... = muladd_grad(_grad[i], a[i], b[i], c[i]) for i in [0, n), one pass; a
// null _grad_<input> is a gradient not asked for (not written). Instantiated like launch_muladd.
template <typename scalar_t>
void launch_muladd_backward(const scalar_t* _grad, const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* _grad_a, scalar_t* _grad_b, scalar_t* _grad_c, int64_t n,
                           cudaStream_t stream);

}  // namespace muladd
