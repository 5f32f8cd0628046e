// log_softmax_kernel.cu: the CUDA kernels of myteam::log_softmax: one instantiation per dtype of
// the package's rowwise kernels (../../kernelgen/rowwise.cuh: the kernels, their launch, and the rules
// that pick the launch shape for this op's row) for this op's steps (Op in ../log_softmax.h, which the
// CPU loop shares). The tensor side (checks, device guard, allocation, stream, dtype dispatch,
// registration) is in log_softmax_cuda.cpp. This file sees raw pointers only and includes no tensor
// headers: nvcc spends most of a build parsing them, and the kernel needs none.

#include "../../kernelgen/rowwise.cuh"
#include "../log_softmax.h"
#include "log_softmax_kernel.h"

namespace log_softmax {

template <typename scalar_t>
void launch_log_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  kg::rowwise::Launch<Op, scalar_t>::run(x, out, rows, cols, stream);
}

// One instantiation per supported dtype; log_softmax_cuda.cpp calls them from its dtype dispatch.
template void launch_log_softmax<float>(const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<double>(const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<torch::headeronly::Half>(const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);

}  // namespace log_softmax
