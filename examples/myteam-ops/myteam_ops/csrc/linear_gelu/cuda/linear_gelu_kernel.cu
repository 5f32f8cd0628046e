// linear_gelu_kernel.cu: the CUDA kernels of myteam::linear_gelu, C = A @ B with its epilogue: the
// epilogue, and one instantiation per dtype of the package's kernels (../../kernelgen/gemm.cuh).
// float16 and bfloat16: the matrix-product kernels (a tensor-core kernel for float16/bfloat16 on
// sm_80+, the SIMT kernel otherwise) and their launch; on Hopper, the CUTLASS kernel of linear_gelu_sm90.cu
// runs first.
// float32 and float64: cuBLAS computes the product, and the epilogue has a pass of its own
// (linear_gelu_cuda.cpp says why).
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// linear_gelu_cuda.cpp. This file sees raw pointers only and includes no tensor headers (stable or
// not), which nvcc is slow to parse: only the half types and the CUDA error checks, header-only.

#include "../../kernelgen/gemm.cuh"
#include "linear_gelu_kernel.h"

namespace linear_gelu {

// The op (its bias and epilogue: Op in ../linear_gelu_problem.h) on the package's kernels.
template <typename scalar_t>
void launch_linear_gelu(const scalar_t* a, const scalar_t* b, const scalar_t* bias, scalar_t* c, scalar_t* acc_out, const Problem& p,
                  int device, cudaStream_t stream) {
#if defined(KG_SM90A)
  // On Hopper, the CUTLASS kernel (linear_gelu_sm90.cu) when it takes the problem; the package's
  // kernels otherwise.
  if constexpr (kg::gemm::kTensorCoreType<scalar_t>) {
    if (kg::gemm::is_sm90(device) && launch_linear_gelu_sm90<scalar_t>(a, b, bias, c, acc_out, p, device, stream)) {
      return;
    }
  }
#endif
  kg::gemm::Launch<Op, scalar_t>::run(a, b, bias, c, p, device, stream, acc_out);
}

// The epilogue's backward (Op::grads) on the package's kernel (kg::gemm::BackwardLaunch in gemm.cuh).
template <typename scalar_t>
int64_t linear_gelu_backward_slots(int64_t rows, int64_t n, int device) {
  return kg::gemm::BackwardLaunch<Op, scalar_t>::slots(rows, n, device);
}

template <typename scalar_t>
void launch_linear_gelu_backward(const scalar_t* grad, const scalar_t* acc, const scalar_t* bias, scalar_t* dacc, scalar_t* dbias,
                  partial_t<scalar_t>* partial, int64_t rows, int64_t n, int device, cudaStream_t stream) {
  kg::gemm::BackwardLaunch<Op, scalar_t>::run(grad, acc, bias, dacc, dbias, partial, rows, n, device, stream);
}

// The epilogue alone, after cuBLAS's product (float32 and float64: kg::gemm::EpilogueLaunch in gemm.cuh).
template <typename scalar_t>
void launch_linear_gelu_epilogue(const scalar_t* acc, const scalar_t* bias, scalar_t* out, int64_t total, int64_t n, int device,
                  cudaStream_t stream) {
  kg::gemm::EpilogueLaunch<Op, scalar_t>::run(acc, bias, out, total, n, device, stream);
}

// One instantiation per dtype; linear_gelu_cuda.cpp calls them from its dtype dispatch.
template void launch_linear_gelu<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, torch::headeronly::Half*, const Problem&, int, cudaStream_t);
template void launch_linear_gelu<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, const Problem&, int, cudaStream_t);
template void launch_linear_gelu_epilogue<float>(const float*, const float*, float*, int64_t, int64_t, int, cudaStream_t);
template void launch_linear_gelu_epilogue<double>(const double*, const double*, double*, int64_t, int64_t, int, cudaStream_t);
template int64_t linear_gelu_backward_slots<float>(int64_t, int64_t, int);
template void launch_linear_gelu_backward<float>(const float*, const float*, const float*, float*, float*, partial_t<float>*, int64_t, int64_t, int, cudaStream_t);
template int64_t linear_gelu_backward_slots<double>(int64_t, int64_t, int);
template void launch_linear_gelu_backward<double>(const double*, const double*, const double*, double*, double*, partial_t<double>*, int64_t, int64_t, int, cudaStream_t);
template int64_t linear_gelu_backward_slots<torch::headeronly::Half>(int64_t, int64_t, int);
template void launch_linear_gelu_backward<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, torch::headeronly::Half*, partial_t<torch::headeronly::Half>*, int64_t, int64_t, int, cudaStream_t);
template int64_t linear_gelu_backward_slots<torch::headeronly::BFloat16>(int64_t, int64_t, int);
template void launch_linear_gelu_backward<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, partial_t<torch::headeronly::BFloat16>*, int64_t, int64_t, int, cudaStream_t);

}  // namespace linear_gelu
