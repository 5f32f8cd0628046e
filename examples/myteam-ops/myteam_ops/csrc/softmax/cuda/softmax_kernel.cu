// softmax_kernel.cu: the CUDA kernels of myteam::softmax: the steps of its formula,
// and one instantiation per dtype of the package's rowwise kernels (../../kernelgen/rowwise.cuh: the
// kernels, their launch, and the rules that pick the launch shape for this op's row).
// The formula itself is in ../softmax.h, shared with the CPU code. The tensor side (checks,
// device guard, allocation, stream, dtype dispatch, registration) is in softmax_cuda.cpp. This
// file sees raw pointers only and includes no tensor headers: nvcc spends most of a build parsing
// them, and the kernel needs none.

#include "../../kernelgen/rowwise.cuh"
#include "../softmax.h"
#include "softmax_kernel.h"

namespace softmax {
namespace {

// What the package's rowwise kernels need to know of this op. Its one column is the input x.
struct Op {
  static constexpr int kInputs = 1;
  static constexpr int kWeights = 0;
  static constexpr int kReductions = softmax::kReductions;
  // The math type: float for float16, bfloat16 and float32, double for float64. The reductions
  // accumulate in it too.
  template <typename scalar_t>
  using math_t = opmath::opmath_type<scalar_t>;
  template <int R, typename acc_t>
  using Reduce = kg::rowwise::Nth<R, Reduce0<acc_t>, Reduce1<acc_t>>;
  static constexpr bool kMean[kReductions] = {kMean0, kMean1};
  // The columns each step reads: the kernels load a weight only where a step reads it.
  static constexpr bool kReads[kReductions + 1][1] = {
      {true},  // _r[0] = max(x)
      {true},  // _r[1] = sum(exp(x - max(x)))
      {false},  // the output
  };
  // The output reuses reduction 1's per-element argument: the register kernel keeps it
  // from the reduction instead of evaluating it again.
  static constexpr int kKept = 1;

  // Step R's argument at one element: v holds the columns' values, r the reductions so far.
  template <int R, typename acc_t>
  static __device__ __forceinline__ acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return softmax_reduce0_arg<acc_t>(v[0], r);
    } else {
      return softmax_reduce1_arg<acc_t>(v[0], r);
    }
  }
  // The output at one element; `kept` is reduction kKept's argument there.
  template <typename acc_t>
  static __device__ __forceinline__ acc_t out(const acc_t* v, acc_t kept, const acc_t* r) {
    return softmax_out<acc_t>(v[0], kept, r);
  }
};

}  // namespace

template <typename scalar_t>
void launch_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                   cudaStream_t stream) {
  kg::rowwise::Launch<Op, scalar_t>::run(x, out, rows, cols, stream);
}

// One instantiation per supported dtype; softmax_cuda.cpp calls them from its dtype dispatch.
template void launch_softmax<float>(const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_softmax<double>(const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_softmax<torch::headeronly::Half>(const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_softmax<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);

}  // namespace softmax
