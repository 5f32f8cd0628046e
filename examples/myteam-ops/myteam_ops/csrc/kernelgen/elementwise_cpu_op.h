#pragma once
// kernelgen/elementwise_cpu_op.h: the CPU implementation of every elementwise op of this package and of
// its backward: the contiguous copies of the inputs, the new output or gradients, and the loop over the
// elements that torch::stable::parallel_for shares among the threads. An op's own file
// (csrc/<op>/<op>.cpp) checks its inputs, builds one of these, and calls its run<scalar_t>(formula) under
// the dtype dispatch of the op's own dtypes, the formula being the op's scalar function of <op>.h at the
// math type acc_t, which the header reads from the formula's first parameter:
//
//   kg::elementwise::CpuForward<2> forward({&a, &b});
//   THO_DISPATCH_V2(a.scalar_type(), "op_cpu", AT_WRAP([&] {
//     using acc_t = opmath::opmath_type<scalar_t>;
//     forward.run<scalar_t>([](acc_t a, acc_t b) { return op_expr<acc_t>(a, b); });
//   }), <the op's dtypes>);
//   return forward.out();
//
// Everything that can fail (an allocation, a copy) happens in the constructor, before the parallel
// loop, and nothing inside the loop may throw: the loop body runs behind libtorch's C interface
// (torch_parallel_for), which catches an exception, prints it to stderr and reports a generic failure
// instead of the message.

#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "../stable_utils.h"
#include "tensors.h"

namespace kg {
namespace elementwise {
namespace {

using kernelgen::Tensor;

// Elements per task of torch::stable::parallel_for: big enough that a small tensor stays on one
// thread (spawning work costs microseconds), small enough to spread a large one over all cores.
constexpr int64_t kGrainSize = 32768;

// The type of the first parameter of a lambda (its math type, acc_t).
template <typename F>
struct FirstParam : FirstParam<decltype(&F::operator())> {};
template <typename C, typename R, typename A, typename... Rest>
struct FirstParam<R (C::*)(A, Rest...) const> {
  using type = A;
};

// The forward over N inputs of one shape: out() is a new tensor of that shape, which
// run<scalar_t>(expr) fills with out[i] = expr(input 0[i], ..., input N-1[i]), each element widened to
// the math type acc_t (expr's parameter type) and the result rounded once when stored.
template <std::size_t N>
class CpuForward {
 public:
  explicit CpuForward(const std::array<const Tensor*, N>& inputs)
      : contig_(contiguous_all(inputs)), out_(empty_row_major(*inputs[0])) {}

  template <typename scalar_t, typename Expr>
  void run(Expr expr) {
    loop<scalar_t, typename FirstParam<Expr>::type>(expr, std::make_index_sequence<N>{});
  }

  Tensor out() const { return out_; }

 private:
  template <typename scalar_t, typename acc_t, typename Expr, std::size_t... I>
  void loop(Expr expr, std::index_sequence<I...>) {
    const int64_t n = out_.numel();
    if (n == 0) {
      return;
    }
    const std::array<const scalar_t*, N> in = {contig_[I].template const_data_ptr<scalar_t>()...};
    scalar_t* out = out_.template mutable_data_ptr<scalar_t>();
    // ATen's intra-op thread pool (it honours torch.set_num_threads), reached through the stable ABI.
    torch::stable::parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = static_cast<scalar_t>(expr(static_cast<acc_t>(in[I][i])...));
      }
    });
  }

  std::vector<Tensor> contig_;
  Tensor out_;
};

// The backward over N inputs: the gradients of the inputs flagged in `needs`, in order, from the
// output's gradient `grad`, in one pass over memory: run<scalar_t>(grad_fn) calls grad_fn(grad[i],
// input 0[i], ..., d) once an element, which writes every input's gradient into acc_t d[N] (the op's
// <op>_grad in <op>.h), and stores those asked for.
template <std::size_t N>
class CpuBackward {
 public:
  CpuBackward(const Tensor& grad, const std::vector<bool>& needs, const std::array<const Tensor*, N>& inputs)
      : contig_(contiguous_all(with_grad(grad, inputs))) {
    for (std::size_t j = 0; j < N; ++j) {
      needs_[j] = needs[j];
      if (needs[j]) {
        grads_.push_back(empty_row_major(*inputs[j]));
      }
    }
  }

  template <typename scalar_t, typename GradFn>
  void run(GradFn grad_fn) {
    loop<scalar_t, typename FirstParam<GradFn>::type>(grad_fn, std::make_index_sequence<N + 1>{});
  }

  std::vector<Tensor> grads() const { return grads_; }

 private:
  template <typename scalar_t, typename acc_t, typename GradFn, std::size_t... I>
  void loop(GradFn grad_fn, std::index_sequence<I...>) {
    const int64_t n = contig_[0].numel();
    if (n == 0 || grads_.empty()) {
      return;
    }
    const std::array<const scalar_t*, N + 1> in = {contig_[I].template const_data_ptr<scalar_t>()...};
    // Input j's gradient, or null where it is not asked for.
    std::array<scalar_t*, N> out{};
    for (std::size_t j = 0, k = 0; j < N; ++j) {
      if (needs_[j]) {
        out[j] = grads_[k++].template mutable_data_ptr<scalar_t>();
      }
    }
    torch::stable::parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        acc_t d[N];
        grad_fn(static_cast<acc_t>(in[I][i])..., d);
        for (std::size_t j = 0; j < N; ++j) {
          if (out[j] != nullptr) {
            out[j][i] = static_cast<scalar_t>(d[j]);
          }
        }
      }
    });
  }

  std::vector<Tensor> contig_;  // the output's gradient, then the inputs
  std::vector<Tensor> grads_;   // the gradients asked for, in order
  std::array<bool, N> needs_{};
};

}  // namespace
}  // namespace elementwise
}  // namespace kg
