// layernorm_kernel.cu: the CUDA kernels of myteam::layernorm: the steps of its formula,
// and one instantiation per dtype of the package's rowwise kernels (../../kernelgen/rowwise.cuh: the
// kernels, their launch, and the rules that pick the launch shape for this op's row).
// The formula itself is in ../layernorm.h, shared with the CPU code. The tensor side (checks,
// device guard, allocation, stream, dtype dispatch, registration) is in layernorm_cuda.cpp. This
// file sees raw pointers only and includes no tensor headers: nvcc spends most of a build parsing
// them, and the kernel needs none.

#include "../../kernelgen/rowwise.cuh"
#include "../layernorm.h"
#include "layernorm_kernel.h"

namespace layernorm {
namespace {

// What the package's rowwise kernels need to know of this op. Its columns are the input, then the weights:
// x (0), w (1), b (2).
struct Op {
  static constexpr int kInputs = 1;
  static constexpr int kWeights = 2;
  static constexpr int kReductions = layernorm::kReductions;
  // The math type: float for float16, bfloat16 and float32, double for float64. The reductions
  // accumulate in it too.
  template <typename scalar_t>
  using math_t = opmath::opmath_type<scalar_t>;
  template <int R, typename acc_t>
  using Reduce = kg::rowwise::Nth<R, Reduce0<acc_t>, Reduce1<acc_t>>;
  static constexpr bool kMean[kReductions] = {kMean0, kMean1};
  // The columns each step reads: the kernels load a weight only where a step reads it.
  static constexpr bool kReads[kReductions + 1][3] = {
      {true, false, false},  // _r[0] = mean(x)
      {true, false, false},  // _r[1] = mean((x - mean(x)) ** 2.0)
      {true, true, true},  // the output
  };
  static constexpr int kKept = -1;  // the output evaluates its own terms

  // Step R's argument at one element: v holds the columns' values, r the reductions so far.
  template <int R, typename acc_t>
  static __device__ __forceinline__ acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return layernorm_reduce0_arg<acc_t>(v[0], v[1], v[2], r);
    } else {
      return layernorm_reduce1_arg<acc_t>(v[0], v[1], v[2], r);
    }
  }
  // The output at one element; `kept` is reduction kKept's argument there.
  template <typename acc_t>
  static __device__ __forceinline__ acc_t out(const acc_t* v, acc_t kept, const acc_t* r) {
    return layernorm_out<acc_t>(v[0], v[1], v[2], r);
  }
};

}  // namespace

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

}  // namespace layernorm
