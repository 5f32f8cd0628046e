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

#include <string>
#include <utility>
#include <vector>

#include "../kernelgen/rowwise_cpu_op.h"
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

Tensor layernorm_cpu(const Tensor& x, const Tensor& w, const Tensor& b) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x, w, b);
  // The package's CPU implementation (../kernelgen/rowwise_cpu_op.h) of this op's steps (Op in layernorm.h):
  // the output, then its rows for the dtype of x.
  kg::rowwise::CpuForward<Op> forward({&x, &w, &b});
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_cpu", AT_WRAP([&] { forward.run<scalar_t>(); }),
                  ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}


// The backward: the gradients of the inputs and weights flagged in `_needs`, in order, from the output's
// gradient `_grad` (GradOp in layernorm.h: per row its reductions, then every column's gradient), by the
// package's CPU backward (../kernelgen/rowwise_cpu_op.h). A weight's gradient sums its contributions over the
// rows in a fixed order, whatever the number of threads: it is bitwise reproducible.
std::vector<Tensor> layernorm_backward_cpu(const Tensor& _grad, const Tensor& x, const Tensor& w, const Tensor& b, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, w, b, _needs);
  kg::rowwise::CpuBackward<GradOp> backward(_grad, _needs, {&x, &w, &b});
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_backward_cpu", AT_WRAP([&] { backward.run<scalar_t>(); }),
                  ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
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
