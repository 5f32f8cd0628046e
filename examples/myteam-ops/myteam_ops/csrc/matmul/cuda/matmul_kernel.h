#pragma once
// matmul_kernel.h: the interface between the tensor code (matmul_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernels (matmul_kernel.cu, compiled by
// nvcc without it).
// Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include "../matmul_problem.h"

namespace matmul {

// C = matmul_epilogue(A @ B) for p.batch row-major, contiguous problems (A: M x K, B: K x N,
// C: M x N, each batch entry stored after the previous one), on GPU `device`, launched on
// `stream`. Needs M, N and batch >= 1, K >= 0, batch <= 65535 and ceil(M / 128) <= 65535 (the grid
// limits). Instantiated in matmul_kernel.cu for torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_matmul(const scalar_t* a, const scalar_t* b, scalar_t* c, const Problem& p,
                  int device, cudaStream_t stream);

// The Hopper path (matmul_sm90.cu, CUTLASS; compiled when the build targets 9.0, see KG_SM90A in
// _build.py): float16/bfloat16 on an sm_90 device. Returns false, having launched nothing, when the
// problem is one it does not take (K or N not a multiple of 8, misaligned pointers, K = 0).
template <typename scalar_t>
bool launch_matmul_sm90(const scalar_t* a, const scalar_t* b, scalar_t* c, const Problem& p,
                       int device, cudaStream_t stream);

}  // namespace matmul
