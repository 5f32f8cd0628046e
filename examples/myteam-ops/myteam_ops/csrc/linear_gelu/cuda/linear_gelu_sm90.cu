// linear_gelu_sm90.cu: the Hopper (sm_90a) path of myteam::linear_gelu for float16 and bfloat16: the
// package's CUTLASS kernel (../../kernelgen/gemm_sm90.cuh: TMA, wgmma, a persistent warp-specialized
// kernel, two tile configurations) with this op's epilogue (linear_gelu_epilogue in ../linear_gelu_problem.h,
// through the Op it declares there), one instantiation per dtype. linear_gelu_kernel.cu calls it first
// on an sm_90 device and falls back to the package's hand-written kernels when it declines a problem.

#include "../../kernelgen/gemm_sm90.cuh"  // first: it builds CUTLASS without device-side asserts
#include "linear_gelu_kernel.h"

namespace linear_gelu {

template <typename scalar_t>
bool launch_linear_gelu_sm90(const scalar_t* a, const scalar_t* b, const scalar_t* bias, scalar_t* c, scalar_t* acc_out, const Problem& p,
                       int device, cudaStream_t stream) {
  return kg::gemm_sm90::Launch<Op, scalar_t>::run(a, b, bias, c, p, device, stream, acc_out);
}

template bool launch_linear_gelu_sm90<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, torch::headeronly::Half*, const Problem&, int, cudaStream_t);
template bool launch_linear_gelu_sm90<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, const Problem&, int, cudaStream_t);

}  // namespace linear_gelu
