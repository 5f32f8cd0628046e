// gelu_kernel.cu: the CUDA kernel of myteam::gelu: its formula, and one
// instantiation per dtype of the package's elementwise kernel (../../kernelgen/elementwise.cuh: the
// kernel, its launch, and the rules that pick the launch shape for this op's inputs and math).
// The formula itself is gelu_expr in ../gelu.h, shared with the CPU code. The tensor
// side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// gelu_cuda.cpp. This file sees raw pointers only and includes no tensor headers, stable or
// not: nvcc spends most of a build parsing ATen's (about 25 s of a 35 s compile), and the kernel
// needs none. Only header-only pieces of torch are used: the half types and the CUDA error checks.

#include "../../kernelgen/elementwise.cuh"
#include "../gelu.h"
#include "gelu_kernel.h"

namespace gelu {
namespace {

// What the package's elementwise kernel needs to know of this op.
struct Op {
  static constexpr int kInputs = 1;
  // The formula's cost in float instructions per element (kernelgen's estimate from --expr: exp 10,
  // sin 25, pow 40, a division 10, +-* 1, ...). It steers the launch shape, never the result: if you
  // change the formula in ../gelu.h, re-estimate it.
  static constexpr int kMathCost = 22;
  template <typename acc_t>
  static __device__ __forceinline__ acc_t apply(acc_t x) {
    return gelu_expr<acc_t>(x);
  }
};

// The backward: every input's gradient in one pass (gelu_grad in ../gelu.h).
struct GradOp {
  static constexpr int kInputs = 1;  // the op's inputs; the kernel also reads the output's gradient
  template <typename acc_t>
  static __device__ __forceinline__ void apply(acc_t _grad, acc_t x, acc_t (&_d)[kInputs]) {
    gelu_grad<acc_t>(_grad, x, _d);
  }
};

}  // namespace

template <typename scalar_t>
void launch_gelu(const scalar_t* x, scalar_t* out, int64_t n, cudaStream_t stream) {
  kg::elementwise::Launch<Op, scalar_t>::run(x, out, n, stream);
}

template <typename scalar_t>
void launch_gelu_backward(const scalar_t* _grad, const scalar_t* x, scalar_t* _grad_x, int64_t n,
                         cudaStream_t stream) {
  kg::elementwise::GradLaunch<GradOp, scalar_t>::run(_grad, x, _grad_x, n, stream);
}

// One instantiation per supported dtype; gelu_cuda.cpp calls them from its dtype dispatch.
template void launch_gelu<float>(const float*, float*, int64_t, cudaStream_t);
template void launch_gelu<double>(const double*, double*, int64_t, cudaStream_t);
template void launch_gelu<torch::headeronly::Half>(const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_gelu<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);
template void launch_gelu_backward<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void launch_gelu_backward<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void launch_gelu_backward<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_gelu_backward<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);

}  // namespace gelu
