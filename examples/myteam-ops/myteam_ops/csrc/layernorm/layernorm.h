#pragma once
// layernorm.h: the formula of myteam::layernorm, in the order it is evaluated, shared by the CPU
// loop (layernorm.cpp) and the CUDA kernel (cuda/layernorm_kernel.cu), so that both backends compute
// exactly the same thing. Keep tensor headers out of this file: the kernel includes it.

#include "../opmath.h"

namespace layernorm {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2.0) + 1e-05) * w + b".
//
// A row is the last dimension of the input; the weights w, b have one value per
// column, the same for every row. The expression is evaluated in 3 steps: each distinct
// reduction once, inner ones first, then the output, elementwise. _r[k] is the value of
// reduction k for the current row. acc_t is the op-math type: float for float16, bfloat16 and
// float32 inputs, double for float64. The reductions accumulate in it too.
//
// If you change the formula, change reference() in ops/layernorm.py to match: the tests compare
// against it and the default backward is derived from it. If a step comes to read another input or
// weight, mark it in Op::kReads below: the CUDA kernels pass 0 for a column a step does not read.
constexpr int kReductions = 2;

// _r[0] = mean(x): Reduce0 folds layernorm_reduce0_arg over the row, then kMean0 divides by the row length.
template <typename acc_t>
using Reduce0 = opmath::SumOp<acc_t>;
constexpr bool kMean0 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_reduce0_arg(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return x;
}

// _r[1] = mean((x - mean(x)) ** 2.0): Reduce1 folds layernorm_reduce1_arg over the row, then kMean1 divides by the row length.
template <typename acc_t>
using Reduce1 = opmath::SumOp<acc_t>;
constexpr bool kMean1 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_reduce1_arg(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return opmath::square(x - _r[0]);
}

// The output, element by element.
template <typename acc_t>
OPMATH_FN acc_t layernorm_out(acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return (x - _r[0]) * opmath::rsqrt(_r[1] + acc_t(1e-05)) * w + b;
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// What the package's rowwise kernels (CPU and CUDA) need to know of this op. Its columns are the input, then the weights:
// x (0), w (1), b (2).
struct Op {
  static constexpr int kInputs = 1;
  static constexpr int kWeights = 2;
  static constexpr int kReductions = layernorm::kReductions;
  // The math type: float for float16, bfloat16 and float32, double for float64. The reductions
  // accumulate in it too.
  template <typename scalar_t>
  using math_t = opmath::opmath_type<scalar_t>;
  // The CUDA kernels evaluate the formula of a float16 or bfloat16 row in opmath::fast_float (fast
  // division and exp; see Steps::eval_t in ../kernelgen/rowwise.cuh). The CPU loop computes in math_t.
  static constexpr bool kFastMath = true;
  // The formula's arithmetic at one element, in about an instruction a unit (kernelgen.cost: a division
  // or exp 10, cos 25): the cluster kernel holds fewer elements a thread where its unrolled code would
  // outgrow the instruction cache (cluster_start in ../kernelgen/rowwise.cuh).
  static constexpr int kMathCost = 11;
  template <int R, typename acc_t>
  using Reduce = opmath::Nth<R, Reduce0<acc_t>, Reduce1<acc_t>>;
  static constexpr bool kMean[kReductions] = {kMean0, kMean1};
  // The columns each step reads: the kernels load a weight only where a step reads it.
  static constexpr bool kReads[kReductions + 1][3] = {
      {true, false, false},  // _r[0] = mean(x)
      {true, false, false},  // _r[1] = mean((x - mean(x)) ** 2.0)
      {true, true, true},  // the output
  };
  static constexpr int kKept = -1;  // the output evaluates its own terms
  // Rows held by several blocks of a cluster (CUDA, rows past 16384) complete reduction R together with
  // reduction J = kOnline[R], in one exchange between the blocks instead of two (-1: R on its own). Each
  // block computes R's sum with its own value of _r[J] and the exchange corrects it: kernelgen pairs them where
  // R's argument is exp(f - _r[J]) times terms that do not read _r[J], with _r[J] = max(f) (the online
  // softmax), or (f - _r[J]) squared with _r[J] = mean(f) (kCentered: the variance), and no step between
  // them reads _r[J]. If you change R's formula so that this no longer holds, write -1 for it.
  static constexpr int kOnline[kReductions] = {-1, 0};
  static constexpr bool kCentered[kReductions] = {false, true};
  static constexpr int kShared = 0;  // no per-element term is read by two steps

  // Step R's argument at one element: v holds the columns' values, r the reductions so far.
  template <int R, typename acc_t>
  static OPMATH_FN acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return layernorm_reduce0_arg<acc_t>(v[0], v[1], v[2], r);
    } else {
      return layernorm_reduce1_arg<acc_t>(v[0], v[1], v[2], r);
    }
  }
  // The output at one element; `kept` is reduction kKept's argument there.
  template <typename acc_t>
  static OPMATH_FN acc_t out(const acc_t* v, acc_t kept, const acc_t* r) {
    return layernorm_out<acc_t>(v[0], v[1], v[2], r);
  }
};


// ---- the backward -----------------------------------------------------------------------------
// The gradients of layernorm given the gradient _grad of its output, written by kernelgen from the
// expression above (its symbolic derivatives, reverse mode through the steps). The backward of a rowwise
// op is itself a rowwise op, of the columns _grad, x, w, b: 4 reductions over the row
// (the forward's per-row values the gradients read, computed again from the inputs, and the backward's
// own), then, per element, the gradient of each input and each weight's contribution of this row (a
// weight's gradient is the sum of its contributions over the rows). layernorm_grad_reduce<k>_arg and
// layernorm_grad are called by the CPU loop and the CUDA kernels of layernorm_backward alike. If you
// change the formula above, change these to match: the tests compare them with the exact gradients of
// reference().
constexpr int kGradReductions = 4;

// _r[0] = mean(x) (the forward's _r[0])
template <typename acc_t>
using GradReduce0 = opmath::SumOp<acc_t>;
constexpr bool kGradMean0 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_grad_reduce0_arg(acc_t _grad, acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return x;
}

// _r[1] = mean(_grad * w)
template <typename acc_t>
using GradReduce1 = opmath::SumOp<acc_t>;
constexpr bool kGradMean1 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_grad_reduce1_arg(acc_t _grad, acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return _grad * w;
}

// _r[2] = mean((x - mean(x)) ** 2.0) (the forward's _r[1])
template <typename acc_t>
using GradReduce2 = opmath::SumOp<acc_t>;
constexpr bool kGradMean2 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_grad_reduce2_arg(acc_t _grad, acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return opmath::square(x - _r[0]);
}

// _r[3] = mean(_grad * w * (x - mean(x)))
template <typename acc_t>
using GradReduce3 = opmath::SumOp<acc_t>;
constexpr bool kGradMean3 = true;
template <typename acc_t>
OPMATH_FN acc_t layernorm_grad_reduce3_arg(acc_t _grad, acc_t x, acc_t w, acc_t b, const acc_t* _r) {
  return _grad * w * (x - _r[0]);
}

// Per element: _d[j] = the gradient of column j (x, w, b), a weight's for this row.
template <typename acc_t>
OPMATH_FN void layernorm_grad(acc_t _grad, acc_t x, acc_t w, acc_t b, const acc_t* _r, acc_t (&_d)[3]) {
  const acc_t _t0 = opmath::rsqrt(_r[2] + acc_t(1e-05));
  const acc_t _t1 = x - _r[0];
  _d[0] = _grad * (_t0 * w) - _t0 * _r[1] - opmath::ipow<3>(_t0) * _r[3] * _t1;
  _d[1] = _grad * (_t1 * _t0);
  _d[2] = _grad;
}

// What the package's rowwise backward kernels (CPU and CUDA) need to know of it, as Op above: its
// columns are _grad (0), then x (1), w (2), b (3).
struct GradOp {
  static constexpr int kInputs = 2;  // _grad and the inputs: rows
  static constexpr int kWeights = 2;
  static constexpr int kReductions = kGradReductions;
  template <typename scalar_t>
  using math_t = opmath::opmath_type<scalar_t>;
  // As the forward's: the CUDA kernels evaluate the gradients of a float16 or bfloat16 row in
  // opmath::fast_float, the CPU loop in math_t. A mask's term (f of [f == max(f)]), which the multi-pass
  // kernel computes again in each step, takes the same instructions in each copy (exact sums and products;
  // a division or exp gives one result for the same operands), so each copy has the bits the reduction saw.
  static constexpr bool kFastMath = true;
  // About the instructions one element of every step and term inlines (kernelgen.cost.own_code: an
  // accurate sin or cos about 100). The register kernel unrolls them over the elements a thread holds,
  // and the launch takes its narrow build where the wide one's code would outgrow the SM's instruction
  // cache (GradLaunch::takes_narrow in ../kernelgen/rowwise.cuh).
  static constexpr int kCode = 23;
  template <int R, typename acc_t>
  using Reduce = opmath::Nth<R, GradReduce0<acc_t>, GradReduce1<acc_t>, GradReduce2<acc_t>, GradReduce3<acc_t>>;
  static constexpr bool kMean[kReductions] = {kGradMean0, kGradMean1, kGradMean2, kGradMean3};
  static constexpr bool kReads[kReductions + 1][4] = {
      {false, true, false, false},  // _r[0]
      {true, false, true, false},  // _r[1]
      {false, true, false, false},  // _r[2]
      {true, true, true, false},  // _r[3]
      {true, true, true, false},  // the gradients
  };
  static constexpr int kKept = -1;
  // The reductions are numbered pass by pass (kPass[R]: each pass after those of the reductions its own
  // read): the multi-pass kernel folds a pass's reductions in one loop over the row, and the register and
  // cluster kernels complete them with one barrier. If you make R read a reduction of its own pass or a
  // later one, renumber.
  static constexpr int kPass[kReductions] = {0, 0, 1, 1};
  static constexpr int kShared = 0;  // no per-element term is read by two steps

  template <int R, typename acc_t>
  static OPMATH_FN acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return layernorm_grad_reduce0_arg<acc_t>(v[0], v[1], v[2], v[3], r);
    } else if constexpr (R == 1) {
      return layernorm_grad_reduce1_arg<acc_t>(v[0], v[1], v[2], v[3], r);
    } else if constexpr (R == 2) {
      return layernorm_grad_reduce2_arg<acc_t>(v[0], v[1], v[2], v[3], r);
    } else {
      return layernorm_grad_reduce3_arg<acc_t>(v[0], v[1], v[2], v[3], r);
    }
  }
  // Every column's gradient at one element (v: the columns' values, then the shared terms'; r: the
  // reductions, then the row length).
  template <typename acc_t>
  static OPMATH_FN void grads(const acc_t* v, const acc_t* r, acc_t (&d)[3]) {
    layernorm_grad<acc_t>(v[0], v[1], v[2], v[3], r, d);
  }
};

}  // namespace layernorm
