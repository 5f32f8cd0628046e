#pragma once
// kernelgen/rowwise_cpu_op.h: the CPU implementation of every rowwise op of this package and of its
// backward, around the loops of rowwise_cpu.h: the contiguous copies of the arguments, the new output
// or gradients, the tasks of rows that torch::stable::parallel_for shares among the threads, and the
// weights' partial sums. An op's own file (csrc/<op>/<op>.cpp) checks its arguments, builds one of
// these, and calls its run<scalar_t>() under the dtype dispatch of the op's own dtypes:
//
//   kg::rowwise::CpuForward<Op> forward({&x, &w});
//   THO_DISPATCH_V2(x.scalar_type(), "op_cpu", AT_WRAP([&] { forward.run<scalar_t>(); }), <the op's dtypes>);
//   return forward.out();
//
// Everything that can fail (an allocation, a copy) happens before the parallel loop, most of it in the
// constructor: nothing inside the loop may throw (its body runs behind libtorch's C interface, which
// would replace a message by a generic failure).

#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "../stable_utils.h"
#include "rowwise_cpu.h"
#include "tensors.h"

namespace kg {
namespace rowwise {
namespace {

using kernelgen::Tensor;

// Rows per task of torch::stable::parallel_for, chosen so that a task holds about this many elements:
// a small tensor stays on one thread (spawning work costs microseconds), a large one spreads over all cores.
constexpr int64_t kGrainElements = 32768;

// The forward of Op (csrc/<op>/<op>.h) over its columns, the inputs and then the weights: out() is a
// new contiguous tensor shaped like the first input, which run<scalar_t>() fills row by row.
template <class Op>
class CpuForward {
 public:
  static constexpr std::size_t kColumns = Op::kInputs + Op::kWeights;

  explicit CpuForward(const std::array<const Tensor*, kColumns>& columns)
      : contig_(contiguous_all(columns)),
        out_(empty_row_major(*columns[0])),
        cols_(columns[0]->size(columns[0]->dim() - 1)),
        rows_(cols_ == 0 ? 0 : out_.numel() / cols_) {}

  template <typename scalar_t>
  void run() {
    run<scalar_t>(std::make_index_sequence<kColumns>{});
  }

  Tensor out() const { return out_; }

 private:
  template <typename scalar_t, std::size_t... I>
  void run(std::index_sequence<I...>) {
    if (rows_ == 0) {
      return;  // no rows, or rows of length 0: nothing to compute
    }
    const std::array<const scalar_t*, kColumns> in = {contig_[I].template const_data_ptr<scalar_t>()...};
    scalar_t* out = out_.template mutable_data_ptr<scalar_t>();
    const int64_t cols = cols_;
    torch::stable::parallel_for(0, rows_, std::max<int64_t>(1, kGrainElements / cols), [&](int64_t begin, int64_t end) {
      CpuRows<Op, scalar_t>::run(in[I]..., out, begin, end, cols);
    });
  }

  std::vector<Tensor> contig_;
  Tensor out_;
  int64_t cols_;
  int64_t rows_;
};

// The backward of an op, GradOp (csrc/<op>/<op>.h): the gradients of the arguments (the inputs, then the
// weights) flagged in `needs`, in order, from the output's gradient `grad`. A weight's gradient sums its
// contributions over the rows: each task of rows adds them up in its own partial sums, in row order, and
// the tasks' sums are added in order (sum_columns). The tasks are fixed blocks of rows, whatever the
// number of threads, so the result is bitwise reproducible.
template <class GradOp>
class CpuBackward {
 public:
  static constexpr int kInputs = GradOp::kInputs - 1;  // GradOp's column 0 is the output's gradient
  static constexpr int kWeights = GradOp::kWeights;
  static constexpr std::size_t kArgs = kInputs + kWeights;

  CpuBackward(const Tensor& grad, const std::vector<bool>& needs, const std::array<const Tensor*, kArgs>& args)
      : contig_(contiguous_all(with_grad(grad, args))),
        cols_(args[0]->size(args[0]->dim() - 1)),
        rows_(cols_ == 0 ? 0 : args[0]->numel() / cols_) {
    for (std::size_t j = 0; j < kArgs; ++j) {
      if (needs[j]) {
        grads_.push_back(empty_row_major(*args[j]));
        if (rows_ == 0 && j >= kInputs) {
          torch::stable::zero_(grads_.back());  // a weight's gradient: a sum over no rows
        }
      }
      needs_[j] = needs[j];
    }
  }

  template <typename scalar_t>
  void run() {
    run<scalar_t>(std::make_index_sequence<GradOp::kInputs + kWeights>{});
  }

  std::vector<Tensor> grads() const { return grads_; }

 private:
  template <typename scalar_t, std::size_t... I>
  void run(std::index_sequence<I...>) {
    if (rows_ == 0 || grads_.empty()) {
      return;
    }
    using Rows = CpuGradRows<GradOp, scalar_t>;
    using acc_t = typename Rows::acc_t;
    const std::array<const scalar_t*, sizeof...(I)> in = {contig_[I].template const_data_ptr<scalar_t>()...};
    // Argument j's gradient, or null where it is not asked for.
    std::array<scalar_t*, kArgs> grads{};
    for (std::size_t j = 0, k = 0; j < kArgs; ++j) {
      if (needs_[j]) {
        grads[j] = grads_[k++].template mutable_data_ptr<scalar_t>();
      }
    }
    const int64_t cols = cols_;
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    const int64_t tasks = (rows_ + grain - 1) / grain;
    // Per weight asked for, one row of `cols` partial sums per task.
    int64_t sums = 0;
    for (std::size_t j = kInputs; j < kArgs; ++j) {
      sums += grads[j] != nullptr ? 1 : 0;
    }
    std::vector<acc_t> partials(static_cast<std::size_t>(sums * tasks * cols), acc_t(0));
    torch::stable::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        std::array<acc_t*, (kWeights > 0 ? kWeights : 1)> partial{};
        for (int j = 0, k = 0; j < kWeights; ++j) {
          if (grads[kInputs + j] != nullptr) {
            partial[j] = partials.data() + ((k++) * tasks + task) * cols;
          }
        }
        Rows::run(in[I]..., grads.data(), partial.data(), task * grain, std::min(rows_, (task + 1) * grain), cols);
      }
    });
    for (int j = 0, k = 0; j < kWeights; ++j) {
      if (grads[kInputs + j] != nullptr) {
        sum_columns(partials.data() + (k++) * tasks * cols, tasks, cols, grads[kInputs + j]);
      }
    }
  }

  std::vector<Tensor> contig_;  // the output's gradient, then the arguments
  std::vector<Tensor> grads_;   // the gradients asked for, in order
  std::array<bool, kArgs> needs_{};
  int64_t cols_;
  int64_t rows_;
};

}  // namespace
}  // namespace rowwise
}  // namespace kg
