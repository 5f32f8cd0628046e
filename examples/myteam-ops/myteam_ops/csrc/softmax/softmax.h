#pragma once
// softmax.h: the formula of myteam::softmax, in the order it is evaluated, shared by the CPU
// loop (softmax.cpp) and the CUDA kernel (cuda/softmax_kernel.cu), so that both backends compute
// exactly the same thing. Keep tensor headers out of this file: the kernel includes it.

#include "../opmath.h"

namespace softmax {

// ---- EDIT HERE: the kernel body ---------------------------------------------------------------
// Generated from --expr "exp(x - max(x)) / sum(exp(x - max(x)))".
//
// A row is the last dimension of the input. The expression is evaluated in 3 steps: each distinct
// reduction once, inner ones first, then the output, elementwise. _r[k] is the value of
// reduction k for the current row. acc_t is the op-math type: float for float16, bfloat16 and
// float32 inputs, double for float64. The reductions accumulate in it too.
//
// If you change the formula, change reference() in ops/softmax.py to match: the tests compare
// against it and the default backward is derived from it. If a step comes to read another input or
// weight, mark it in Op::kReads below: the CUDA kernels pass 0 for a column a step does not read.
constexpr int kReductions = 2;

// _r[0] = max(x): Reduce0 folds softmax_reduce0_arg over the row.
template <typename acc_t>
using Reduce0 = opmath::MaxOp<acc_t>;
constexpr bool kMean0 = false;
template <typename acc_t>
OPMATH_FN acc_t softmax_reduce0_arg(acc_t x, const acc_t* _r) {
  return x;
}

// _r[1] = sum(exp(x - max(x))): Reduce1 folds softmax_reduce1_arg over the row.
template <typename acc_t>
using Reduce1 = opmath::SumOp<acc_t>;
constexpr bool kMean1 = false;
template <typename acc_t>
OPMATH_FN acc_t softmax_reduce1_arg(acc_t x, const acc_t* _r) {
  return opmath::exp(x - _r[0]);
}

// The output, element by element. _a1 is softmax_reduce1_arg at this element: the output
// reuses it, so the CUDA kernel keeps the values it computed for reduction 1 in registers
// instead of evaluating them again (the CPU loop and the multi-pass kernel pass it recomputed).
template <typename acc_t>
OPMATH_FN acc_t softmax_out(acc_t x, acc_t _a1, const acc_t* _r) {
  return _a1 * (acc_t(1.0) / _r[1]);
}
// ---- end of EDIT HERE -------------------------------------------------------------------------

// What the package's rowwise kernels (CPU and CUDA) need to know of this op. Its one column is the input x.
struct Op {
  static constexpr int kInputs = 1;
  static constexpr int kWeights = 0;
  static constexpr int kReductions = softmax::kReductions;
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
  static constexpr int kMathCost = 32;
  template <int R, typename acc_t>
  using Reduce = opmath::Nth<R, Reduce0<acc_t>, Reduce1<acc_t>>;
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
  // Rows held by several blocks of a cluster (CUDA, rows past 16384) complete reduction R together with
  // reduction J = kOnline[R], in one exchange between the blocks instead of two (-1: R on its own). Each
  // block computes R's sum with its own value of _r[J] and the exchange corrects it: kernelgen pairs them where
  // R's argument is exp(f - _r[J]) times terms that do not read _r[J], with _r[J] = max(f) (the online
  // softmax), or (f - _r[J]) squared with _r[J] = mean(f) (kCentered: the variance), and no step between
  // them reads _r[J]. If you change R's formula so that this no longer holds, write -1 for it.
  static constexpr int kOnline[kReductions] = {-1, 0};
  static constexpr bool kCentered[kReductions] = {false, false};
  static constexpr int kShared = 0;  // no per-element term is read by two steps

  // Step R's argument at one element: v holds the columns' values, r the reductions so far.
  template <int R, typename acc_t>
  static OPMATH_FN acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return softmax_reduce0_arg<acc_t>(v[0], r);
    } else {
      return softmax_reduce1_arg<acc_t>(v[0], r);
    }
  }
  // The output at one element; `kept` is reduction kKept's argument there.
  template <typename acc_t>
  static OPMATH_FN acc_t out(const acc_t* v, acc_t kept, const acc_t* r) {
    return softmax_out<acc_t>(v[0], kept, r);
  }
};


// ---- the backward -----------------------------------------------------------------------------
// The gradients of softmax given the gradient _grad of its output, written by kernelgen from the
// expression above (its symbolic derivatives, reverse mode through the steps). The backward of a rowwise
// op is itself a rowwise op, of the columns _grad, x: 3 reductions over the row
// (the forward's per-row values the gradients read, computed again from the inputs, and the backward's
// own), then, per element, the gradient of each input. softmax_grad_reduce<k>_arg and
// softmax_grad are called by the CPU loop and the CUDA kernels of softmax_backward alike. If you
// change the formula above, change these to match: the tests compare them with the exact gradients of
// reference().
constexpr int kGradReductions = 3;

// _r[0] = max(x) (the forward's _r[0])
template <typename acc_t>
using GradReduce0 = opmath::MaxOp<acc_t>;
constexpr bool kGradMean0 = false;
template <typename acc_t>
OPMATH_FN acc_t softmax_grad_reduce0_arg(acc_t _grad, acc_t x, const acc_t* _r) {
  return x;
}

// _r[1] = sum(exp(x - max(x))) (the forward's _r[1])
template <typename acc_t>
using GradReduce1 = opmath::SumOp<acc_t>;
constexpr bool kGradMean1 = false;
template <typename acc_t>
OPMATH_FN acc_t softmax_grad_reduce1_arg(acc_t _grad, acc_t x, const acc_t* _r) {
  return opmath::exp(x - _r[0]);
}

// _r[2] = sum(_grad * exp(x - max(x)))
template <typename acc_t>
using GradReduce2 = opmath::SumOp<acc_t>;
constexpr bool kGradMean2 = false;
template <typename acc_t>
OPMATH_FN acc_t softmax_grad_reduce2_arg(acc_t _grad, acc_t x, const acc_t* _r) {
  return _grad * opmath::exp(x - _r[0]);
}

// Per element: _d[j] = the gradient of column j (x).
template <typename acc_t>
OPMATH_FN void softmax_grad(acc_t _grad, acc_t x, const acc_t* _r, acc_t (&_d)[1]) {
  const acc_t _t0 = opmath::exp(x - _r[0]);
  _d[0] = _grad * (_t0 * (acc_t(1.0) / _r[1])) - _r[2] / opmath::square(_r[1]) * _t0;
}

// What the package's rowwise backward kernels (CPU and CUDA) need to know of it, as Op above: its
// columns are _grad (0), then x (1).
struct GradOp {
  static constexpr int kInputs = 2;  // _grad and the inputs: rows
  static constexpr int kWeights = 0;
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
  static constexpr int kCode = 59;
  template <int R, typename acc_t>
  using Reduce = opmath::Nth<R, GradReduce0<acc_t>, GradReduce1<acc_t>, GradReduce2<acc_t>>;
  static constexpr bool kMean[kReductions] = {kGradMean0, kGradMean1, kGradMean2};
  static constexpr bool kReads[kReductions + 1][2] = {
      {false, true},  // _r[0]
      {false, true},  // _r[1]
      {true, true},  // _r[2]
      {true, true},  // the gradients
  };
  static constexpr int kKept = -1;
  // The reductions are numbered pass by pass (kPass[R]: each pass after those of the reductions its own
  // read): the multi-pass kernel folds a pass's reductions in one loop over the row, and the register and
  // cluster kernels complete them with one barrier. If you make R read a reduction of its own pass or a
  // later one, renumber.
  static constexpr int kPass[kReductions] = {0, 1, 1};
  static constexpr int kShared = 0;  // no per-element term is read by two steps

  template <int R, typename acc_t>
  static OPMATH_FN acc_t arg(const acc_t* v, const acc_t* r) {
    if constexpr (R == 0) {
      return softmax_grad_reduce0_arg<acc_t>(v[0], v[1], r);
    } else if constexpr (R == 1) {
      return softmax_grad_reduce1_arg<acc_t>(v[0], v[1], r);
    } else {
      return softmax_grad_reduce2_arg<acc_t>(v[0], v[1], r);
    }
  }
  // Every column's gradient at one element (v: the columns' values, then the shared terms'; r: the
  // reductions, then the row length).
  template <typename acc_t>
  static OPMATH_FN void grads(const acc_t* v, const acc_t* r, acc_t (&d)[1]) {
    softmax_grad<acc_t>(v[0], v[1], r, d);
  }
};

}  // namespace softmax
