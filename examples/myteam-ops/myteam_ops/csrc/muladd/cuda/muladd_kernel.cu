// muladd_kernel.cu: the CUDA kernel of myteam::muladd: its formula, and one
// instantiation per dtype of the package's elementwise kernel (../../kernelgen/elementwise.cuh: the
// kernel, its launch, and the rules that pick the launch shape for this op's inputs and math).
// The formula itself is muladd_expr in ../muladd.h, shared with the CPU code. The tensor
// side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// muladd_cuda.cpp. This file sees raw pointers only and includes no tensor headers, stable or
// not: nvcc spends most of a build parsing ATen's (about 25 s of a 35 s compile), and the kernel
// needs none. Only header-only pieces of torch are used: the half types and the CUDA error checks.

#include "../../kernelgen/elementwise.cuh"
#include "../muladd.h"
#include "muladd_kernel.h"

namespace muladd {
namespace {

// What the package's elementwise kernel needs to know of this op.
struct Op {
  static constexpr int kInputs = 3;
  // The formula's cost in float instructions per element (kernelgen's estimate from --expr: exp 10,
  // sin 25, pow 40, a division 10, +-* 1, ...). It steers the launch shape, never the result: if you
  // change the formula in ../muladd.h, re-estimate it.
  static constexpr int kMathCost = 2;
  template <typename acc_t>
  static __device__ __forceinline__ acc_t apply(acc_t a, acc_t b, acc_t c) {
    return muladd_expr<acc_t>(a, b, c);
  }
};

// The backward: every input's gradient in one pass (muladd_grad in ../muladd.h).
struct GradOp {
  static constexpr int kInputs = 3;  // the op's inputs; the kernel also reads the output's gradient
  template <typename acc_t>
  static __device__ __forceinline__ void apply(acc_t _grad, acc_t a, acc_t b, acc_t c, acc_t (&_d)[kInputs]) {
    muladd_grad<acc_t>(_grad, a, b, c, _d);
  }
};

}  // namespace

template <typename scalar_t>
void launch_muladd(const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* out, int64_t n, cudaStream_t stream) {
  kg::elementwise::Launch<Op, scalar_t>::run(a, b, c, out, n, stream);
}

template <typename scalar_t>
void launch_muladd_backward(const scalar_t* _grad, const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* _grad_a, scalar_t* _grad_b, scalar_t* _grad_c, int64_t n,
                           cudaStream_t stream) {
  kg::elementwise::GradLaunch<GradOp, scalar_t>::run(_grad, a, b, c, _grad_a, _grad_b, _grad_c, n, stream);
}

// One instantiation per supported dtype; muladd_cuda.cpp calls them from its dtype dispatch.
template void launch_muladd<float>(const float*, const float*, const float*, float*, int64_t, cudaStream_t);
template void launch_muladd<double>(const double*, const double*, const double*, double*, int64_t, cudaStream_t);
template void launch_muladd<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_muladd<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);
template void launch_muladd_backward<float>(const float*, const float*, const float*, const float*, float*, float*, float*, int64_t, cudaStream_t);
template void launch_muladd_backward<double>(const double*, const double*, const double*, const double*, double*, double*, double*, int64_t, cudaStream_t);
template void launch_muladd_backward<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_muladd_backward<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);

}  // namespace muladd
