// gelu.cpp: the schema of myteam::gelu, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/gelu.py), and torch.library.opcheck can test it.
// STABLE_TORCH_LIBRARY_FRAGMENT, not STABLE_TORCH_LIBRARY: every op of the package, and any other
// library in the process, may add ops to the namespace myteam. A second library defining
// myteam anywhere in the process would abort Python at import (it throws from a static
// initializer).
//
// LibTorch stable ABI: only torch/csrc/stable and torch/headeronly headers (see ../stable_utils.h),
// so the compiled op calls libtorch through its stable C shim alone, and the same binary keeps
// working on later torch releases. They are also far lighter than ATen's: this file compiles in a
// few seconds.

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <string>
#include <utility>
#include <vector>

#include "../kernelgen/elementwise_cpu_op.h"
#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "gelu.h"
#include "gelu_checks.h"

namespace gelu {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message. Dtypes, shapes and devices are named with the kernelgen:: helpers:
  // the stable types have no operator<< to stream them.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "gelu: x has dtype ", kernelgen::dtype_name(dtype), ", but gelu supports float32, float64, float16, bfloat16");
}

void check_backward_inputs(const Tensor& _grad, const Tensor& x, const std::vector<bool>& _needs) {
  check_inputs(x);
  KG_CHECK(_grad.device() == x.device() && _grad.scalar_type() == x.scalar_type() &&
               _grad.sizes().equals(x.sizes()),
           "gelu_backward: grad is ", kernelgen::dtype_name(_grad.scalar_type()), " of shape ", kernelgen::shape_of(_grad),
           " on ", kernelgen::device_of(_grad.device()), ", but the inputs are ", kernelgen::dtype_name(x.scalar_type()),
           " of shape ", kernelgen::shape_of(x), " on ", kernelgen::device_of(x.device()));
  KG_CHECK(_needs.size() == 1, "gelu_backward: got ", std::to_string(_needs.size()),
           " flags in _needs, but gelu has 1 input (one flag each)");
}

namespace {

Tensor gelu_cpu(const Tensor& x) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x);
  // The package's CPU implementation (../kernelgen/elementwise_cpu_op.h): the output, then
  // gelu_expr (gelu.h) at every element in the math type of the dtype of x.
  // THO_DISPATCH_V2: AT_DISPATCH_V2's header-only twin. scalar_t is the element type of each dtype
  // listed at the end (torch::headeronly::Half and BFloat16 are c10's half types, compiled in).
  kg::elementwise::CpuForward<1> forward({&x});
  THO_DISPATCH_V2(x.scalar_type(), "gelu_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    forward.run<scalar_t>([](acc_t x) { return gelu_expr<acc_t>(x); });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward: the gradients of the inputs flagged in `_needs`, in order, from the output's gradient
// `_grad`, in one pass over memory (gelu_grad in gelu.h computes all of them per element).
std::vector<Tensor> gelu_backward_cpu(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  kg::elementwise::CpuBackward<1> backward(_grad, _needs, {&x});
  THO_DISPATCH_V2(x.scalar_type(), "gelu_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    backward.run<scalar_t>([](acc_t _grad, acc_t x, acc_t (&_d)[1]) {
      gelu_grad<acc_t>(_grad, x, _d);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace gelu

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("gelu(Tensor x) -> Tensor");
  // The gradients of the inputs flagged in `_needs`, in order: the op's autograd backward (ops/gelu.py).
  m.def("gelu_backward(Tensor _grad, Tensor x, bool[] _needs) -> Tensor[]");
}

// The CPU implementation. The CUDA one is registered in cuda/gelu_cuda.cpp. The stable ABI
// registers boxed kernels only (a stack of StableIValues crosses the C interface): TORCH_BOX
// generates that wrapper around the typed function.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("gelu", TORCH_BOX(&gelu::gelu_cpu));
  m.impl("gelu_backward", TORCH_BOX(&gelu::gelu_backward_cpu));
}
