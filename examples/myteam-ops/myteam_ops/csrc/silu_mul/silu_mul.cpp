// silu_mul.cpp: the schema of myteam::silu_mul, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/silu_mul.py), and torch.library.opcheck can test it.
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
#include "silu_mul.h"
#include "silu_mul_checks.h"

namespace silu_mul {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x, const Tensor& y) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message. Dtypes, shapes and devices are named with the kernelgen:: helpers:
  // the stable types have no operator<< to stream them.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "silu_mul: x has dtype ", kernelgen::dtype_name(dtype), ", but silu_mul supports float32, float64, float16, bfloat16");
  // Every other input must match x: the op neither broadcasts nor promotes types, so
  // a mismatch is a caller bug and is reported rather than silently converted.
  const std::pair<const char*, const Tensor*> others[] = {
      {"y", &y}};
  for (const auto& [name, t] : others) {
    KG_CHECK(t->device() == x.device(), "silu_mul: ", name, " is on ", kernelgen::device_of(t->device()),
             " but x is on ", kernelgen::device_of(x.device()), "; all inputs must be on the same device");
    KG_CHECK(t->scalar_type() == dtype, "silu_mul: ", name, " has dtype ", kernelgen::dtype_name(t->scalar_type()),
             " but x has dtype ", kernelgen::dtype_name(dtype), "; all inputs must have the same dtype");
    KG_CHECK(t->sizes().equals(x.sizes()), "silu_mul: ", name, " has shape ", kernelgen::shape_of(*t),
             " but x has shape ", kernelgen::shape_of(x), "; all inputs must have the same shape (no broadcasting)");
  }
}

void check_backward_inputs(const Tensor& _grad, const Tensor& x, const Tensor& y, const std::vector<bool>& _needs) {
  check_inputs(x, y);
  KG_CHECK(_grad.device() == x.device() && _grad.scalar_type() == x.scalar_type() &&
               _grad.sizes().equals(x.sizes()),
           "silu_mul_backward: grad is ", kernelgen::dtype_name(_grad.scalar_type()), " of shape ", kernelgen::shape_of(_grad),
           " on ", kernelgen::device_of(_grad.device()), ", but the inputs are ", kernelgen::dtype_name(x.scalar_type()),
           " of shape ", kernelgen::shape_of(x), " on ", kernelgen::device_of(x.device()));
  KG_CHECK(_needs.size() == 2, "silu_mul_backward: got ", std::to_string(_needs.size()),
           " flags in _needs, but silu_mul has 2 inputs (one flag each)");
}

namespace {

Tensor silu_mul_cpu(const Tensor& x, const Tensor& y) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x, y);
  // The package's CPU implementation (../kernelgen/elementwise_cpu_op.h): the output, then
  // silu_mul_expr (silu_mul.h) at every element in the math type of the dtype of x.
  // THO_DISPATCH_V2: AT_DISPATCH_V2's header-only twin. scalar_t is the element type of each dtype
  // listed at the end (torch::headeronly::Half and BFloat16 are c10's half types, compiled in).
  kg::elementwise::CpuForward<2> forward({&x, &y});
  THO_DISPATCH_V2(x.scalar_type(), "silu_mul_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    forward.run<scalar_t>([](acc_t x, acc_t y) { return silu_mul_expr<acc_t>(x, y); });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward: the gradients of the inputs flagged in `_needs`, in order, from the output's gradient
// `_grad`, in one pass over memory (silu_mul_grad in silu_mul.h computes all of them per element).
std::vector<Tensor> silu_mul_backward_cpu(const Tensor& _grad, const Tensor& x, const Tensor& y, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, y, _needs);
  kg::elementwise::CpuBackward<2> backward(_grad, _needs, {&x, &y});
  THO_DISPATCH_V2(x.scalar_type(), "silu_mul_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    backward.run<scalar_t>([](acc_t _grad, acc_t x, acc_t y, acc_t (&_d)[2]) {
      silu_mul_grad<acc_t>(_grad, x, y, _d);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace silu_mul

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("silu_mul(Tensor x, Tensor y) -> Tensor");
  // The gradients of the inputs flagged in `_needs`, in order: the op's autograd backward (ops/silu_mul.py).
  m.def("silu_mul_backward(Tensor _grad, Tensor x, Tensor y, bool[] _needs) -> Tensor[]");
}

// The CPU implementation. The CUDA one is registered in cuda/silu_mul_cuda.cpp. The stable ABI
// registers boxed kernels only (a stack of StableIValues crosses the C interface): TORCH_BOX
// generates that wrapper around the typed function.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("silu_mul", TORCH_BOX(&silu_mul::silu_mul_cpu));
  m.impl("silu_mul_backward", TORCH_BOX(&silu_mul::silu_mul_backward_cpu));
}
