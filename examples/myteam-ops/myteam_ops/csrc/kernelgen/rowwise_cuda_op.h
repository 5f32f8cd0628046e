#pragma once
// kernelgen/rowwise_cuda_op.h: the tensor side of every CUDA rowwise op of this package and of its
// backward, around its launch functions (csrc/<op>/cuda/<op>_kernel.h): the new output or gradients,
// the weights' partial-sum buffer, and the launch's call over the arguments of cuda_op.h (their GPU,
// their row-major copies, the caller's stream). An op's own file (csrc/<op>/cuda/<op>_cuda.cpp) checks
// its arguments, builds one of these, and passes its launch function for each of its own dtypes:
//
//   kg::rowwise::CudaForward<2> forward({&x, &w});
//   THO_DISPATCH_V2(x.scalar_type(), "op_cuda", AT_WRAP([&] { forward.run<scalar_t>(launch_op<scalar_t>); }), <the op's dtypes>);
//   return forward.out();

#include <cuda_runtime_api.h>
#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../stable_utils.h"
#include "cuda_op.h"
#include "tensors.h"

namespace kg {
namespace rowwise {
namespace {

using kernelgen::Tensor;

// The forward over N columns, the inputs and then the weights: out() is a new contiguous tensor shaped
// like the first input, which run(launch) fills with one call of the op's launch function
// launch(column 0, ..., column N-1, out, rows, cols, stream).
template <std::size_t N>
class CudaForward {
 public:
  explicit CudaForward(const std::array<const Tensor*, N>& columns)
      : args_(columns),
        out_(empty_row_major(args_[0])),
        cols_(columns[0]->size(columns[0]->dim() - 1)),
        rows_(out_.numel() == 0 ? 0 : out_.numel() / cols_) {}

  template <typename scalar_t, typename... Params>
  void run(void (*launch)(Params...)) {
    static_assert(sizeof...(Params) == N + 4, "launch_<op>(columns..., out, rows, cols, stream)");
    launch_with<scalar_t>(launch, std::make_index_sequence<N>{});
  }

  Tensor out() const { return out_; }

 private:
  template <typename scalar_t, typename Launch, std::size_t... I>
  void launch_with(Launch launch, std::index_sequence<I...>) {
    if (rows_ == 0) {
      return;  // no rows, or empty rows: a launch with zero blocks is an error, and there is nothing to do
    }
    launch(args_.template data<scalar_t>(I)..., out_.template mutable_data_ptr<scalar_t>(), rows_, cols_, args_.stream());
  }

  CudaArgs<N> args_;
  Tensor out_;
  int64_t cols_;
  int64_t rows_;
};

// The backward over kInputs inputs and kWeights weights: the gradients of the arguments flagged in
// `needs`, in order, from the output's gradient `grad`. run(slots, launch) makes one call of the op's
// backward launch function launch(grad, argument 0, ..., grads, partial, rows, cols, stream), where
// grads[j] is argument j's gradient or null (the kernel then writes none) and `partial` holds
// slots(rows, cols) x cols values of the math type for each weight whose gradient is asked for: each
// slot's partial sums over its rows, which the launch's second, small kernel adds up in a fixed order
// (rowwise.cuh). No atomics: a weight's gradient is bitwise reproducible.
template <std::size_t kInputs, std::size_t kWeights>
class CudaBackward {
 public:
  static constexpr std::size_t kArgs = kInputs + kWeights;

  CudaBackward(const Tensor& grad, const std::vector<bool>& needs, const std::array<const Tensor*, kArgs>& args)
      : args_(with_grad(grad, args)),
        cols_(args[0]->size(args[0]->dim() - 1)),
        rows_(cols_ == 0 ? 0 : args[0]->numel() / cols_) {
    for (std::size_t j = 0; j < kArgs; ++j) {
      needs_[j] = needs[j];
      if (needs[j]) {
        grads_.push_back(empty_row_major(args_[j + 1]));
        if (rows_ == 0 && j >= kInputs) {
          torch::stable::zero_(grads_.back());  // a weight's gradient: a sum over no rows
        }
      }
    }
  }

  // `slots` and `launch` are the op's <op>_backward_slots<scalar_t> and launch_<op>_backward<scalar_t>;
  // acc_t, the type of the partial sums, is read from the launch's parameter.
  template <typename scalar_t, typename... Params>
  void run(int64_t (*slots)(int64_t, int64_t), void (*launch)(Params...)) {
    static_assert(sizeof...(Params) == kArgs + 6,
                  "launch_<op>_backward(grad, arguments..., grads, partial, rows, cols, stream)");
    using acc_t = std::remove_pointer_t<std::tuple_element_t<kArgs + 2, std::tuple<Params...>>>;
    launch_with<scalar_t, acc_t>(slots, launch, std::make_index_sequence<kArgs + 1>{});
  }

  std::vector<Tensor> grads() const { return grads_; }

 private:
  template <typename scalar_t, typename acc_t, typename Launch, std::size_t... I>
  void launch_with(int64_t (*slots)(int64_t, int64_t), Launch launch, std::index_sequence<I...>) {
    if (rows_ == 0 || grads_.empty()) {
      return;  // nothing to launch: a launch with zero blocks is an error
    }
    std::array<scalar_t*, kArgs> grads{};
    int64_t sums = 0;  // weights whose gradient is asked for
    for (std::size_t j = 0, k = 0; j < kArgs; ++j) {
      if (needs_[j]) {
        grads[j] = grads_[k++].template mutable_data_ptr<scalar_t>();
        sums += j >= kInputs ? 1 : 0;
      }
    }
    // The weights' partial sums, one row per slot of the launch: a small buffer (the slots fill the GPU
    // once), freed when this function returns; the caching allocator keeps it for the stream's later work.
    Tensor partial_buffer;
    acc_t* partial = nullptr;
    if (sums > 0) {
      const std::vector<int64_t> shape = {sums * slots(rows_, cols_) * cols_};
      partial_buffer = torch::stable::empty(shape, std::is_same_v<acc_t, double> ? torch::headeronly::ScalarType::Double
                                                                                 : torch::headeronly::ScalarType::Float,
                                            std::nullopt, args_[0].device());
      partial = partial_buffer.template mutable_data_ptr<acc_t>();
    }
    launch(args_.template data<scalar_t>(I)..., grads.data(), partial, rows_, cols_, args_.stream());
  }

  CudaArgs<kArgs + 1> args_;    // the output's gradient, then the arguments
  std::vector<Tensor> grads_;  // the gradients asked for, in order
  std::array<bool, kArgs> needs_{};
  int64_t cols_;
  int64_t rows_;
};

}  // namespace
}  // namespace rowwise
}  // namespace kg
