// rmsnorm_kernel.cu: the CUDA kernels of rmsnorm::rmsnorm: one instantiation per dtype of
// the package's rowwise kernels (../../kernelgen/rowwise.cuh: the kernels, their launch, and the rules
// that pick the launch shape for this op's row) for this op's steps (Op in ../rmsnorm.h, which the
// CPU loop shares). The tensor side (checks, device guard, allocation, stream, dtype dispatch,
// registration) is in rmsnorm_cuda.cpp. This file sees raw pointers only and includes no tensor
// headers: nvcc spends most of a build parsing them, and the kernel needs none.

#include "../../kernelgen/rowwise.cuh"
#include "../rmsnorm.h"
#include "rmsnorm_kernel.h"

namespace rmsnorm {

template <typename scalar_t>
void launch_rmsnorm(const scalar_t* x, const scalar_t* w, scalar_t* out, int64_t rows, int64_t cols,
                   cudaStream_t stream) {
  kg::rowwise::Launch<Op, scalar_t>::run(x, w, out, rows, cols, stream);
}

// One instantiation per supported dtype; rmsnorm_cuda.cpp calls them from its dtype dispatch.
template void launch_rmsnorm<float>(const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_rmsnorm<double>(const double*, const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_rmsnorm<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_rmsnorm<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);

}  // namespace rmsnorm
