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


template <typename scalar_t>
int64_t log_softmax_backward_slots(int64_t rows, int64_t cols) {
  return kg::rowwise::GradLaunch<GradOp, scalar_t>::slots(rows, cols);
}

template <typename scalar_t>
void launch_log_softmax_backward(const scalar_t* grad, const scalar_t* x, scalar_t* const* grads,
                                partial_t<scalar_t>* partial, int64_t rows, int64_t cols, cudaStream_t stream) {
  static_assert(std::is_same_v<partial_t<scalar_t>, GradOp::math_t<scalar_t>>, "the partial sums are in the math type");
  kg::rowwise::GradLaunch<GradOp, scalar_t>::run(grad, x, grads, partial, rows, cols, stream);
}

// The backward's instantiations (GradOp in ../log_softmax.h).
template int64_t log_softmax_backward_slots<float>(int64_t, int64_t);
template void launch_log_softmax_backward<float>(const float*, const float*, float* const*,
                                                partial_t<float>*, int64_t, int64_t, cudaStream_t);
template int64_t log_softmax_backward_slots<double>(int64_t, int64_t);
template void launch_log_softmax_backward<double>(const double*, const double*, double* const*,
                                                partial_t<double>*, int64_t, int64_t, cudaStream_t);
template int64_t log_softmax_backward_slots<torch::headeronly::Half>(int64_t, int64_t);
template void launch_log_softmax_backward<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half* const*,
                                                partial_t<torch::headeronly::Half>*, int64_t, int64_t, cudaStream_t);
template int64_t log_softmax_backward_slots<torch::headeronly::BFloat16>(int64_t, int64_t);
template void launch_log_softmax_backward<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16* const*,
                                                partial_t<torch::headeronly::BFloat16>*, int64_t, int64_t, cudaStream_t);

}  // namespace log_softmax
