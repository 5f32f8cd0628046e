// layernorm_kernel.cu: the CUDA kernels of myteam::layernorm: one instantiation per dtype of
// the package's rowwise kernels (../../kernelgen/rowwise.cuh: the kernels, their launch, and the rules
// that pick the launch shape for this op's row) for this op's steps (Op in ../layernorm.h, which the
// CPU loop shares). The tensor side (checks, device guard, allocation, stream, dtype dispatch,
// registration) is in layernorm_cuda.cpp. This file sees raw pointers only and includes no tensor
// headers: nvcc spends most of a build parsing them, and the kernel needs none.

#include "../../kernelgen/rowwise.cuh"
#include "../layernorm.h"
#include "layernorm_kernel.h"

namespace layernorm {

template <typename scalar_t>
void launch_layernorm(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
  kg::rowwise::Launch<Op, scalar_t>::run(x, w, b, out, rows, cols, stream);
}

// One instantiation per supported dtype; layernorm_cuda.cpp calls them from its dtype dispatch.
template void launch_layernorm<float>(const float*, const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<double>(const double*, const double*, const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);


template <typename scalar_t>
int64_t layernorm_backward_slots(int64_t rows, int64_t cols) {
  return kg::rowwise::GradLaunch<GradOp, scalar_t>::slots(rows, cols);
}

template <typename scalar_t>
void launch_layernorm_backward(const scalar_t* grad, const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* const* grads,
                              partial_t<scalar_t>* partial, int64_t rows, int64_t cols, cudaStream_t stream) {
  static_assert(std::is_same_v<partial_t<scalar_t>, GradOp::math_t<scalar_t>>, "the partial sums are in the math type");
  kg::rowwise::GradLaunch<GradOp, scalar_t>::run(grad, x, w, b, grads, partial, rows, cols, stream);
}

// The backward's instantiations (GradOp in ../layernorm.h).
template int64_t layernorm_backward_slots<float>(int64_t, int64_t);
template void launch_layernorm_backward<float>(const float*, const float*, const float*, const float*, float* const*,
                                              partial_t<float>*, int64_t, int64_t, cudaStream_t);
template int64_t layernorm_backward_slots<double>(int64_t, int64_t);
template void launch_layernorm_backward<double>(const double*, const double*, const double*, const double*, double* const*,
                                              partial_t<double>*, int64_t, int64_t, cudaStream_t);
template int64_t layernorm_backward_slots<torch::headeronly::Half>(int64_t, int64_t);
template void launch_layernorm_backward<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half* const*,
                                              partial_t<torch::headeronly::Half>*, int64_t, int64_t, cudaStream_t);
template int64_t layernorm_backward_slots<torch::headeronly::BFloat16>(int64_t, int64_t);
template void launch_layernorm_backward<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16* const*,
                                              partial_t<torch::headeronly::BFloat16>*, int64_t, int64_t, cudaStream_t);

}  // namespace layernorm
