#pragma once
// linear_gelu_kernel.h: the interface between the tensor code (linear_gelu_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernels (linear_gelu_kernel.cu, compiled by
// nvcc without it).
// Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "../linear_gelu_problem.h"

namespace linear_gelu {

// C = linear_gelu_epilogue(A @ B, bias) for p.batch row-major, contiguous problems (A: M x K, B: K x N,
// C: M x N, each batch entry stored after the previous one, bias: N), on GPU `device`, launched on
// `stream`. Needs M, N and batch >= 1, K >= 0, batch <= 65535 and ceil(M / 128) <= 65535 (the grid
// limits). Instantiated in linear_gelu_kernel.cu for torch::headeronly::Half, torch::headeronly::BFloat16.
// acc_out: null, or (the training forward) where the accumulator A @ B is stored too, rounded to
// scalar_t, laid out as C: the backward's derivatives read it.
template <typename scalar_t>
void launch_linear_gelu(const scalar_t* a, const scalar_t* b, const scalar_t* bias, scalar_t* c, scalar_t* acc_out, const Problem& p,
                  int device, cudaStream_t stream);

// out = linear_gelu_epilogue(acc, bias) over `total` elements of rows n long, row-major and contiguous (out may
// be acc: in place), for float32 and float64, whose product is cuBLAS's. total, n >= 1.
template <typename scalar_t>
void launch_linear_gelu_epilogue(const scalar_t* acc, const scalar_t* bias, scalar_t* out, int64_t total, int64_t n, int device,
                  cudaStream_t stream);

// The epilogue's backward over rows x n elements (the output's rows: batch * M, and N), row-major and
// contiguous: dacc = _grad * d out / d acc (null: not asked for) and the bias's gradient dbias, the column
// sums of _grad * d out / d bias (null: not asked for), from grad and acc. `partial` holds linear_gelu_backward_slots(rows, n, device) * n values of the
// op-math type (partial_t) where dbias is asked for. rows, n >= 1.
template <typename scalar_t>
using partial_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
template <typename scalar_t>
int64_t linear_gelu_backward_slots(int64_t rows, int64_t n, int device);
template <typename scalar_t>
void launch_linear_gelu_backward(const scalar_t* grad, const scalar_t* acc, const scalar_t* bias, scalar_t* dacc, scalar_t* dbias,
                  partial_t<scalar_t>* partial, int64_t rows, int64_t n, int device, cudaStream_t stream);

// The Hopper path (linear_gelu_sm90.cu, CUTLASS; compiled when the build targets 9.0, see KG_SM90A in
// _build.py): float16/bfloat16 on an sm_90 device. Returns false, having launched nothing, when the
// problem is one it does not take (K or N not a multiple of 8, misaligned pointers, K = 0).
template <typename scalar_t>
bool launch_linear_gelu_sm90(const scalar_t* a, const scalar_t* b, const scalar_t* bias, scalar_t* c, scalar_t* acc_out, const Problem& p,
                       int device, cudaStream_t stream);

}  // namespace linear_gelu
