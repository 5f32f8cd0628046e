// layernorm.cpp: the schema of myteam::layernorm, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/layernorm.py), and torch.library.opcheck can test it.
// STABLE_TORCH_LIBRARY_FRAGMENT, not STABLE_TORCH_LIBRARY: every op of the package, and any other
// library in the process, may add ops to the namespace myteam.
//
// LibTorch stable ABI: only torch/csrc/stable and torch/headeronly headers (see ../stable_utils.h),
// so the compiled op calls libtorch through its stable C shim alone, and the same binary keeps
// working on later torch releases.

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../kernelgen/rowwise_cpu.h"
#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "layernorm.h"
#include "layernorm_checks.h"

namespace layernorm {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x, const Tensor& w, const Tensor& b) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "layernorm: x has dtype ", kernelgen::dtype_name(dtype), ", but layernorm supports float32, float64, float16, bfloat16");
  KG_CHECK(x.dim() >= 1, "layernorm: x is a 0-dimensional tensor; it needs at least one dimension (the row)");
  // A weight holds one value per column of a row: 1-D, as long as a row, broadcast over the rows.
  const int64_t cols = x.size(x.dim() - 1);
  const std::pair<const char*, const Tensor*> weights[] = {
      {"w", &w}, {"b", &b}};
  for (const auto& [name, t] : weights) {
    KG_CHECK(t->dim() == 1 && t->size(0) == cols, "layernorm: weight ", name, " has shape ", kernelgen::shape_of(*t),
             " but must be [", std::to_string(cols), "]: 1-D, one value per element of a row of x (shape ", kernelgen::shape_of(x), ")");
    KG_CHECK(t->scalar_type() == dtype, "layernorm: weight ", name, " has dtype ", kernelgen::dtype_name(t->scalar_type()),
             " but x has dtype ", kernelgen::dtype_name(dtype), "; weights must have the inputs' dtype");
    KG_CHECK(t->device() == x.device(), "layernorm: weight ", name, " is on ", kernelgen::device_of(t->device()),
             " but x is on ", kernelgen::device_of(x.device()), "; weights must be on the inputs' device");
  }
}


void check_backward_inputs(const Tensor& _grad, const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<bool>& _needs) {
  check_inputs(x, w, b);
  KG_CHECK(_grad.device() == x.device() && _grad.scalar_type() == x.scalar_type() &&
               _grad.sizes().equals(x.sizes()),
           "layernorm_backward: grad is ", kernelgen::dtype_name(_grad.scalar_type()), " of shape ", kernelgen::shape_of(_grad),
           " on ", kernelgen::device_of(_grad.device()), ", but the inputs are ", kernelgen::dtype_name(x.scalar_type()),
           " of shape ", kernelgen::shape_of(x), " on ", kernelgen::device_of(x.device()));
  KG_CHECK(_needs.size() == 3, "layernorm_backward: got ", std::to_string(_needs.size()),
           " flags in _needs, but layernorm has 3 arguments (one flag each: the inputs, then the weights)");
}

namespace {

// Rows per task of torch::stable::parallel_for, chosen so that a task holds about this many elements:
// a small tensor stays on one thread (spawning work costs microseconds), a large one spreads over all cores.
constexpr int64_t kGrainElements = 32768;

Tensor layernorm_cpu(const Tensor& x, const Tensor& w, const Tensor& b) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x, w, b);
  // Row-major (contiguous) data; the *_contig locals keep any copies alive while their pointers are in use.
  const Tensor x_contig = torch::stable::contiguous(x);
  const Tensor w_contig = torch::stable::contiguous(w);
  const Tensor b_contig = torch::stable::contiguous(b);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t cols = x.size(x.dim() - 1);
  if (out.numel() == 0) {
    return out;  // no rows, or rows of length 0: nothing to compute
  }
  const int64_t rows = out.numel() / cols;
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_cpu", AT_WRAP([&] {
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    const scalar_t* w_ptr = w_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    torch::stable::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      // The package's CPU loop (../kernelgen/rowwise_cpu.h) over this op's steps (Op in layernorm.h).
      kg::rowwise::CpuRows<Op, scalar_t>::run(x_ptr, w_ptr, b_ptr, out_ptr, begin, end, cols);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}


// The backward: the gradients of the inputs and weights flagged in `_needs`, in order, from the output's
// gradient `_grad` (GradOp in layernorm.h: per row its reductions, then every column's gradient). A
// weight's gradient sums its contributions over the rows: each task of rows adds them up in its own
// partial sums, in row order, and the tasks' sums are added in order. The tasks are fixed blocks of rows,
// whatever the number of threads, so the result is bitwise reproducible.
std::vector<Tensor> layernorm_backward_cpu(const Tensor& _grad, const Tensor& x, const Tensor& w, const Tensor& b, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, w, b, _needs);
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor x_contig = torch::stable::contiguous(x);
  const Tensor w_contig = torch::stable::contiguous(w);
  const Tensor b_contig = torch::stable::contiguous(b);
  const Tensor* _args[3] = {&x, &w, &b};
  std::vector<Tensor> _grads;
  for (int _j = 0; _j < 3; ++_j) {
    if (_needs[_j]) {
      _grads.push_back(torch::stable::empty(_args[_j]->sizes(), x.scalar_type(), std::nullopt, x.device()));
    }
  }
  const int64_t cols = x.size(x.dim() - 1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0 || _grads.empty()) {
    for (int _j = 0, _k = 0; _j < 3; ++_j) {
      if (_needs[_j]) {
        if (_j >= 1) {
          torch::stable::zero_(_grads[_k]);  // a sum over no rows
        }
        ++_k;
      }
    }
    return _grads;
  }
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;
    const scalar_t* _grad_ptr = _grad_contig.const_data_ptr<scalar_t>();
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    const scalar_t* w_ptr = w_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    // Argument j's gradient, or null where it is not asked for.
    scalar_t* _out_ptr[3] = {};
    for (int _j = 0, _k = 0; _j < 3; ++_j) {
      if (_needs[_j]) {
        _out_ptr[_j] = _grads[_k++].mutable_data_ptr<scalar_t>();
      }
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    const int64_t tasks = (rows + grain - 1) / grain;
    // Per weight asked for, one row of `cols` partial sums per task.
    int _sums = 0;
    for (int _j = 1; _j < 3; ++_j) {
      _sums += _out_ptr[_j] != nullptr ? 1 : 0;
    }
    std::vector<acc_t> _partial(static_cast<std::size_t>(_sums * tasks * cols), acc_t(0));
    torch::stable::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        acc_t* partial[2] = {};
        for (int _j = 0, _k = 0; _j < 2; ++_j) {
          if (_out_ptr[1 + _j] != nullptr) {
            partial[_j] = _partial.data() + ((_k++) * tasks + task) * cols;
          }
        }
        kg::rowwise::CpuGradRows<GradOp, scalar_t>::run(_grad_ptr, x_ptr, w_ptr, b_ptr, _out_ptr, partial, task * grain,
                                                        std::min(rows, (task + 1) * grain), cols);
      }
    });
    for (int _j = 0, _k = 0; _j < 2; ++_j) {
      if (_out_ptr[1 + _j] != nullptr) {
        kg::rowwise::sum_columns(_partial.data() + (_k++) * tasks * cols, tasks, cols, _out_ptr[1 + _j]);
      }
    }
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace layernorm

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("layernorm(Tensor x, Tensor w, Tensor b) -> Tensor");
  // The gradients of the inputs and weights flagged in `_needs`, in order: the op's autograd backward (ops/layernorm.py).
  m.def("layernorm_backward(Tensor _grad, Tensor x, Tensor w, Tensor b, bool[] _needs) -> Tensor[]");
}

// The CPU implementation (the CUDA one is registered in cuda/layernorm_cuda.cpp), boxed by TORCH_BOX.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("layernorm", TORCH_BOX(&layernorm::layernorm_cpu));
  m.impl("layernorm_backward", TORCH_BOX(&layernorm::layernorm_backward_cpu));
}
