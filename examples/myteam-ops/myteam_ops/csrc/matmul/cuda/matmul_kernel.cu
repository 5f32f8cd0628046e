// matmul_kernel.cu: the CUDA kernels of myteam::matmul, C = A @ B with its epilogue: the
// epilogue, and one instantiation per dtype of the package's kernels (../../kernelgen/gemm.cuh).
// float16 and bfloat16: the matrix-product kernels (a tensor-core kernel for float16/bfloat16 on
// sm_80+, the SIMT kernel otherwise) and their launch; on Hopper, the CUTLASS kernel of matmul_sm90.cu
// runs first.
// float32 and float64: cuBLAS computes the product (matmul_cuda.cpp).
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// matmul_cuda.cpp. This file sees raw pointers only and includes no tensor headers (stable or
// not), which nvcc is slow to parse: only the half types and the CUDA error checks, header-only.

#include "../../kernelgen/gemm.cuh"
#include "matmul_kernel.h"

namespace matmul {

// The op (its bias and epilogue: Op in ../matmul_problem.h) on the package's kernels.
template <typename scalar_t>
void launch_matmul(const scalar_t* a, const scalar_t* b, scalar_t* c, const Problem& p,
                  int device, cudaStream_t stream) {
#if defined(KG_SM90A)
  // On Hopper, the CUTLASS kernel (matmul_sm90.cu) when it takes the problem; the package's
  // kernels otherwise.
  if constexpr (kg::gemm::kTensorCoreType<scalar_t>) {
    if (kg::gemm::is_sm90(device) && launch_matmul_sm90<scalar_t>(a, b, c, p, device, stream)) {
      return;
    }
  }
#endif
  kg::gemm::Launch<Op, scalar_t>::run(a, b, c, p, device, stream);
}

// One instantiation per dtype; matmul_cuda.cpp calls them from its dtype dispatch.
template void launch_matmul<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, const Problem&, int, cudaStream_t);
template void launch_matmul<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, const Problem&, int, cudaStream_t);

}  // namespace matmul
