// softmax.cpp: the schema of myteam::softmax, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/softmax.py), and torch.library.opcheck can test it.
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
#include "softmax.h"
#include "softmax_checks.h"

namespace softmax {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "softmax: x has dtype ", kernelgen::dtype_name(dtype), ", but softmax supports float32, float64, float16, bfloat16");
  KG_CHECK(x.dim() >= 1, "softmax: x is a 0-dimensional tensor; it needs at least one dimension (the row)");
}


void check_backward_inputs(const Tensor& _grad, const Tensor& x, const std::vector<bool>& _needs) {
  check_inputs(x);
  KG_CHECK(_grad.device() == x.device() && _grad.scalar_type() == x.scalar_type() &&
               _grad.sizes().equals(x.sizes()),
           "softmax_backward: grad is ", kernelgen::dtype_name(_grad.scalar_type()), " of shape ", kernelgen::shape_of(_grad),
           " on ", kernelgen::device_of(_grad.device()), ", but the inputs are ", kernelgen::dtype_name(x.scalar_type()),
           " of shape ", kernelgen::shape_of(x), " on ", kernelgen::device_of(x.device()));
  KG_CHECK(_needs.size() == 1, "softmax_backward: got ", std::to_string(_needs.size()),
           " flags in _needs, but softmax has 1 argument (one flag each: the inputs, then the weights)");
}

namespace {

// Rows per task of torch::stable::parallel_for, chosen so that a task holds about this many elements:
// a small tensor stays on one thread (spawning work costs microseconds), a large one spreads over all cores.
constexpr int64_t kGrainElements = 32768;

Tensor softmax_cpu(const Tensor& x) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x);
  // Row-major (contiguous) data; the *_contig locals keep any copies alive while their pointers are in use.
  const Tensor x_contig = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t cols = x.size(x.dim() - 1);
  if (out.numel() == 0) {
    return out;  // no rows, or rows of length 0: nothing to compute
  }
  const int64_t rows = out.numel() / cols;
  THO_DISPATCH_V2(x.scalar_type(), "softmax_cpu", AT_WRAP([&] {
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    torch::stable::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      // The package's CPU loop (../kernelgen/rowwise_cpu.h) over this op's steps (Op in softmax.h).
      kg::rowwise::CpuRows<Op, scalar_t>::run(x_ptr, out_ptr, begin, end, cols);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}


// The backward: the gradients of the inputs and weights flagged in `_needs`, in order, from the output's
// gradient `_grad` (GradOp in softmax.h: per row its reductions, then every column's gradient). A
// weight's gradient sums its contributions over the rows: each task of rows adds them up in its own
// partial sums, in row order, and the tasks' sums are added in order. The tasks are fixed blocks of rows,
// whatever the number of threads, so the result is bitwise reproducible.
std::vector<Tensor> softmax_backward_cpu(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor x_contig = torch::stable::contiguous(x);
  const Tensor* _args[1] = {&x};
  std::vector<Tensor> _grads;
  for (int _j = 0; _j < 1; ++_j) {
    if (_needs[_j]) {
      _grads.push_back(torch::stable::empty(_args[_j]->sizes(), x.scalar_type(), std::nullopt, x.device()));
    }
  }
  const int64_t cols = x.size(x.dim() - 1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0 || _grads.empty()) {
    for (int _j = 0, _k = 0; _j < 1; ++_j) {
      if (_needs[_j]) {
        if (_j >= 1) {
          torch::stable::zero_(_grads[_k]);  // a sum over no rows
        }
        ++_k;
      }
    }
    return _grads;
  }
  THO_DISPATCH_V2(x.scalar_type(), "softmax_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;
    const scalar_t* _grad_ptr = _grad_contig.const_data_ptr<scalar_t>();
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    // Argument j's gradient, or null where it is not asked for.
    scalar_t* _out_ptr[1] = {};
    for (int _j = 0, _k = 0; _j < 1; ++_j) {
      if (_needs[_j]) {
        _out_ptr[_j] = _grads[_k++].mutable_data_ptr<scalar_t>();
      }
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    const int64_t tasks = (rows + grain - 1) / grain;
    torch::stable::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        acc_t* partial[1] = {};
        kg::rowwise::CpuGradRows<GradOp, scalar_t>::run(_grad_ptr, x_ptr, _out_ptr, partial, task * grain,
                                                        std::min(rows, (task + 1) * grain), cols);
      }
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace softmax

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("softmax(Tensor x) -> Tensor");
  // The gradients of the inputs and weights flagged in `_needs`, in order: the op's autograd backward (ops/softmax.py).
  m.def("softmax_backward(Tensor _grad, Tensor x, bool[] _needs) -> Tensor[]");
}

// The CPU implementation (the CUDA one is registered in cuda/softmax_cuda.cpp), boxed by TORCH_BOX.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("softmax", TORCH_BOX(&softmax::softmax_cpu));
  m.impl("softmax_backward", TORCH_BOX(&softmax::softmax_backward_cpu));
}
