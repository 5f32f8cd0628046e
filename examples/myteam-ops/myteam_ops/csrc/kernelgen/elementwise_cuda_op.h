#pragma once
// kernelgen/elementwise_cuda_op.h: the tensor side of every CUDA elementwise op of this package and of
// its backward, around its launch functions (csrc/<op>/cuda/<op>_kernel.h): the new output or
// gradients and the launch's call over the arguments of cuda_op.h (their GPU, their row-major copies,
// the caller's stream). An op's own file (csrc/<op>/cuda/<op>_cuda.cpp) checks its inputs, builds one
// of these, and passes its launch function for each of its own dtypes:
//
//   kg::elementwise::CudaForward<2> forward({&a, &b});
//   THO_DISPATCH_V2(a.scalar_type(), "op_cuda", AT_WRAP([&] { forward.run<scalar_t>(launch_op<scalar_t>); }), <the op's dtypes>);
//   return forward.out();

#include <cuda_runtime_api.h>
#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../stable_utils.h"
#include "cuda_op.h"
#include "tensors.h"

namespace kg {
namespace elementwise {
namespace {

using kernelgen::Tensor;

// The forward over N inputs of one shape: out() is a new contiguous tensor of that shape, which
// run(launch) fills with one call of the op's launch function launch(input 0, ..., input N-1, out, n,
// stream), n the number of elements.
template <std::size_t N>
class CudaForward {
 public:
  explicit CudaForward(const std::array<const Tensor*, N>& inputs) : args_(inputs), out_(empty_row_major(args_[0])) {}

  template <typename scalar_t, typename... Params>
  void run(void (*launch)(Params...)) {
    static_assert(sizeof...(Params) == N + 3, "launch_<op>(inputs..., out, n, stream)");
    launch_with<scalar_t>(launch, std::make_index_sequence<N>{});
  }

  Tensor out() const { return out_; }

 private:
  template <typename scalar_t, typename Launch, std::size_t... I>
  void launch_with(Launch launch, std::index_sequence<I...>) {
    if (out_.numel() == 0) {
      return;  // a launch with zero blocks is an error, and there is nothing to do
    }
    launch(args_.template data<scalar_t>(I)..., out_.template mutable_data_ptr<scalar_t>(), out_.numel(), args_.stream());
  }

  CudaArgs<N> args_;
  Tensor out_;
};

// The backward over N inputs: the gradients of the inputs flagged in `needs`, in order, from the
// output's gradient `grad`, by one call of the op's backward launch function launch(grad, input 0, ...,
// gradient 0, ..., n, stream), where gradient j is null where it is not asked for (the kernel then
// writes none).
template <std::size_t N>
class CudaBackward {
 public:
  CudaBackward(const Tensor& grad, const std::vector<bool>& needs, const std::array<const Tensor*, N>& inputs)
      : args_(with_grad(grad, inputs)) {
    for (std::size_t j = 0; j < N; ++j) {
      needs_[j] = needs[j];
      if (needs[j]) {
        grads_.push_back(empty_row_major(args_[j + 1]));
      }
    }
  }

  template <typename scalar_t, typename... Params>
  void run(void (*launch)(Params...)) {
    static_assert(sizeof...(Params) == 2 * N + 3, "launch_<op>_backward(grad, inputs..., gradients..., n, stream)");
    launch_with<scalar_t>(launch, std::make_index_sequence<N + 1>{}, std::make_index_sequence<N>{});
  }

  std::vector<Tensor> grads() const { return grads_; }

 private:
  template <typename scalar_t, typename Launch, std::size_t... I, std::size_t... J>
  void launch_with(Launch launch, std::index_sequence<I...>, std::index_sequence<J...>) {
    const int64_t n = args_[0].numel();
    if (n == 0 || grads_.empty()) {
      return;  // nothing to launch: a launch with zero blocks is an error
    }
    std::array<scalar_t*, N> grads{};
    for (std::size_t j = 0, k = 0; j < N; ++j) {
      if (needs_[j]) {
        grads[j] = grads_[k++].template mutable_data_ptr<scalar_t>();
      }
    }
    launch(args_.template data<scalar_t>(I)..., grads[J]..., n, args_.stream());
  }

  CudaArgs<N + 1> args_;       // the output's gradient, then the inputs
  std::vector<Tensor> grads_;  // the gradients asked for, in order
  std::array<bool, N> needs_{};
};

}  // namespace
}  // namespace elementwise
}  // namespace kg
