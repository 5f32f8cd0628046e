#pragma once
// kernelgen/rowwise_cpu.h: the CPU loop every rowwise op of this package shares. An op's own file
// (csrc/<op>/<op>.cpp) checks its inputs, runs this loop over its rows with torch::stable::parallel_for
// and registers the result; its steps (the `Op` struct in csrc/<op>/<op>.h) are the ones the CUDA
// kernels (rowwise.cuh) run, so both backends compute the same thing in the same order of steps.
//
// For each row: every reduction in order (each one a pass over the row), then the output, a last
// pass. A reduction keeps kLanes partial results, each folding every kLanes-th element, then folds them
// pairwise: a float sum of 65536 elements left to right loses about 8x more accuracy than this, and the
// independent lanes vectorize. Plain C++: nothing here may throw (the loop body runs behind libtorch's
// C interface, which would replace a message by a generic failure), so the op checks everything first.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "../opmath.h"

namespace kg {
namespace rowwise {
namespace {

constexpr int kLanes = 64;  // partial results per row reduction (a power of two)

template <std::size_t, typename T>
using Same = T;

template <class Op, typename scalar_t, class Columns = std::make_index_sequence<Op::kInputs + Op::kWeights>>
struct CpuRows;

template <class Op, typename scalar_t, std::size_t... I>
struct CpuRows<Op, scalar_t, std::index_sequence<I...>> {
  using acc_t = typename Op::template math_t<scalar_t>;
  static constexpr int kColumns = sizeof...(I);
  static constexpr int kValues = kColumns + Op::kShared;  // a step's values: the columns', then the shared terms'

  // Column C at element `col` of row `row` (which starts at `base`): an input's own element, or the
  // weight's, the same for every row.
  template <std::size_t C>
  static acc_t value(const scalar_t* ptr, int64_t row, int64_t base, int64_t col, int64_t cols) {
    if constexpr (C < Op::kInputs) {
      return static_cast<acc_t>(ptr[base + col]);
    } else {
      return static_cast<acc_t>(ptr[col]);  // a weight: one value per column
    }
  }

  // The op's shared terms at one element (Op::kShared: per-element values several steps read), after
  // the columns' values in v: those step S may read, of level S or below (opmath::SharedLevels: a term of
  // level L reads reductions 0 to L - 1, in r). The loop computes them in every step that may read them;
  // the CUDA register kernel computes each once.
  template <int S>
  static void share(acc_t* v, const acc_t* r) {
    share_levels<S>(std::make_integer_sequence<int, opmath::SharedLevels<Op>::kCount>{}, v, r);
  }
  template <int S, int... L>
  static void share_levels(std::integer_sequence<int, L...>, acc_t* v, const acc_t* r) {
    (share_level<S, L>(v, r), ...);
  }
  template <int S, int L>
  static void share_level(acc_t* v, const acc_t* r) {
    if constexpr (Op::kShared > 0 && L == 0) {
      Op::share(v);
    } else if constexpr (Op::kShared > 0 && L <= S) {
      Op::template share_level<L, acc_t>(v, r);
    }
  }

  // Reduction S of one row, into r[S].
  template <int S>
  static void reduce(acc_t* r, int64_t row, int64_t base, int64_t cols, const Same<I, scalar_t>*... in) {
    using Reduce = typename Op::template Reduce<S, acc_t>;
    acc_t part[kLanes];
    for (int lane = 0; lane < kLanes; ++lane) {
      part[lane] = Reduce::identity();
    }
    for (int64_t col = 0; col < cols; ++col) {
      acc_t v[kValues] = {value<I>(in, row, base, col, cols)...};
      share<S>(v, r);
      acc_t& slot = part[col % kLanes];
      slot = Reduce::combine(slot, Op::template arg<S>(v, r));
    }
    for (int width = kLanes / 2; width > 0; width /= 2) {
      for (int lane = 0; lane < width; ++lane) {
        part[lane] = Reduce::combine(part[lane], part[lane + width]);
      }
    }
    r[S] = Op::kMean[S] ? part[0] / static_cast<acc_t>(cols) : part[0];
  }
  template <int... S>
  static void reduce_all(std::integer_sequence<int, S...>, acc_t* r, int64_t row, int64_t base, int64_t cols,
                         const Same<I, scalar_t>*... in) {
    (reduce<S>(r, row, base, cols, in...), ...);
  }

  // Rows [begin, end) of `cols` elements each.
  static void run(const Same<I, scalar_t>*... in, scalar_t* out, int64_t begin, int64_t end, int64_t cols) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t base = row * cols;
      acc_t r[Op::kReductions];
      reduce_all(std::make_integer_sequence<int, Op::kReductions>{}, r, row, base, cols, in...);
      // The output; it computes the kept argument (Op::kKept) again, where the CUDA kernel keeps it.
      for (int64_t col = 0; col < cols; ++col) {
        acc_t v[kValues] = {value<I>(in, row, base, col, cols)...};
        share<Op::kReductions>(v, r);
        acc_t kept = acc_t(0);
        if constexpr (Op::kKept >= 0) {
          kept = Op::template arg<Op::kKept>(v, r);
        }
        out[base + col] = static_cast<scalar_t>(Op::template out<acc_t>(v, kept, r));
      }
    }
  }
};

// The backward of a rowwise op: GradOp in csrc/<op>/<op>.h, a rowwise op whose columns are the output's
// gradient, the op's inputs and its weights. For each row, its reductions (the loop above), then every
// column's gradient per element: an input's is written to its row of `grads[j]` (null: not asked for); a
// weight's contribution is added to `partial[j]` (null: not asked for), one partial sum per column over
// rows [begin, end), in row order. The caller adds the tasks' partial sums up in a fixed order, so the
// weights' gradients do not depend on how the rows were shared among threads.
template <class Op, typename scalar_t, class Columns = std::make_index_sequence<Op::kInputs + Op::kWeights>>
struct CpuGradRows;

template <class Op, typename scalar_t, std::size_t... I>
struct CpuGradRows<Op, scalar_t, std::index_sequence<I...>> {
  using Rows = CpuRows<Op, scalar_t>;
  using acc_t = typename Rows::acc_t;
  static constexpr int kInputGrads = Op::kInputs - 1;  // column 0 is the output's gradient

  static void run(const Same<I, scalar_t>*... in, scalar_t* const* grads, acc_t* const* partial, int64_t begin,
                  int64_t end, int64_t cols) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t row_base = row * cols;
      acc_t r[Op::kReductions + 1];
      r[Op::kReductions] = static_cast<acc_t>(cols);  // the row length, after the reductions
      Rows::reduce_all(std::make_integer_sequence<int, Op::kReductions>{}, r, row, row_base, cols, in...);
      for (int64_t col = 0; col < cols; ++col) {
        acc_t d[Rows::kColumns - 1];
        acc_t v[Rows::kValues] = {Rows::template value<I>(in, row, row_base, col, cols)...};
        Rows::template share<Op::kReductions>(v, r);
        Op::template grads<acc_t>(v, r, d);
        for (int j = 0; j < kInputGrads; ++j) {
          if (grads[j] != nullptr) {
            grads[j][row_base + col] = static_cast<scalar_t>(d[j]);
          }
        }
        for (int j = 0; j < Op::kWeights; ++j) {
          if (partial[j] != nullptr) {
            partial[j][col] += d[kInputGrads + j];
          }
        }
      }
    }
  }
};

// out[col] = the sum over s < slots of partial[s * cols + col], added in order of s.
template <typename acc_t, typename scalar_t>
void sum_columns(const acc_t* partial, int64_t slots, int64_t cols, scalar_t* out) {
  for (int64_t col = 0; col < cols; ++col) {
    acc_t total = acc_t(0);
    for (int64_t s = 0; s < slots; ++s) {
      total += partial[s * cols + col];
    }
    out[col] = static_cast<scalar_t>(total);
  }
}

}  // namespace
}  // namespace rowwise
}  // namespace kg
