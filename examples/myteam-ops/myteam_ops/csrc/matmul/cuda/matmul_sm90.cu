// matmul_sm90.cu: the Hopper (sm_90a) path of myteam::matmul for float16 and bfloat16: the
// package's CUTLASS kernel (../../kernelgen/gemm_sm90.cuh: TMA, wgmma, a persistent warp-specialized
// kernel, two tile configurations) with this op's epilogue (matmul_epilogue in ../matmul_problem.h,
// through the Op it declares there), one instantiation per dtype. matmul_kernel.cu calls it first
// on an sm_90 device and falls back to the package's hand-written kernels when it declines a problem.

#include "../../kernelgen/gemm_sm90.cuh"  // first: it builds CUTLASS without device-side asserts
#include "matmul_kernel.h"

namespace matmul {

template <typename scalar_t>
bool launch_matmul_sm90(const scalar_t* a, const scalar_t* b, scalar_t* c, const Problem& p,
                       int device, cudaStream_t stream) {
  return kg::gemm_sm90::Launch<Op, scalar_t>::run(a, b, c, p, device, stream);
}

template bool launch_matmul_sm90<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, const Problem&, int, cudaStream_t);
template bool launch_matmul_sm90<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, const Problem&, int, cudaStream_t);

}  // namespace matmul
