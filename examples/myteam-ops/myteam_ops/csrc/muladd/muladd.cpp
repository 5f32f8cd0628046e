// muladd.cpp: the schema of myteam::muladd, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/muladd.py), and torch.library.opcheck can test it.
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
#include "muladd.h"
#include "muladd_checks.h"

namespace muladd {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& a, const Tensor& b, const Tensor& c) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message. Dtypes, shapes and devices are named with the kernelgen:: helpers:
  // the stable types have no operator<< to stream them.
  const ScalarType dtype = a.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "muladd: a has dtype ", kernelgen::dtype_name(dtype), ", but muladd supports float32, float64, float16, bfloat16");
  // Every other input must match a: the op neither broadcasts nor promotes types, so
  // a mismatch is a caller bug and is reported rather than silently converted.
  const std::pair<const char*, const Tensor*> others[] = {
      {"b", &b}, {"c", &c}};
  for (const auto& [name, t] : others) {
    KG_CHECK(t->device() == a.device(), "muladd: ", name, " is on ", kernelgen::device_of(t->device()),
             " but a is on ", kernelgen::device_of(a.device()), "; all inputs must be on the same device");
    KG_CHECK(t->scalar_type() == dtype, "muladd: ", name, " has dtype ", kernelgen::dtype_name(t->scalar_type()),
             " but a has dtype ", kernelgen::dtype_name(dtype), "; all inputs must have the same dtype");
    KG_CHECK(t->sizes().equals(a.sizes()), "muladd: ", name, " has shape ", kernelgen::shape_of(*t),
             " but a has shape ", kernelgen::shape_of(a), "; all inputs must have the same shape (no broadcasting)");
  }
}

void check_backward_inputs(const Tensor& _grad, const Tensor& a, const Tensor& b, const Tensor& c, const std::vector<bool>& _needs) {
  check_inputs(a, b, c);
  KG_CHECK(_grad.device() == a.device() && _grad.scalar_type() == a.scalar_type() &&
               _grad.sizes().equals(a.sizes()),
           "muladd_backward: grad is ", kernelgen::dtype_name(_grad.scalar_type()), " of shape ", kernelgen::shape_of(_grad),
           " on ", kernelgen::device_of(_grad.device()), ", but the inputs are ", kernelgen::dtype_name(a.scalar_type()),
           " of shape ", kernelgen::shape_of(a), " on ", kernelgen::device_of(a.device()));
  KG_CHECK(_needs.size() == 3, "muladd_backward: got ", std::to_string(_needs.size()),
           " flags in _needs, but muladd has 3 inputs (one flag each)");
}

namespace {

Tensor muladd_cpu(const Tensor& a, const Tensor& b, const Tensor& c) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(a, b, c);
  // The package's CPU implementation (../kernelgen/elementwise_cpu_op.h): the output, then
  // muladd_expr (muladd.h) at every element in the math type of the dtype of a.
  // THO_DISPATCH_V2: AT_DISPATCH_V2's header-only twin. scalar_t is the element type of each dtype
  // listed at the end (torch::headeronly::Half and BFloat16 are c10's half types, compiled in).
  kg::elementwise::CpuForward<3> forward({&a, &b, &c});
  THO_DISPATCH_V2(a.scalar_type(), "muladd_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    forward.run<scalar_t>([](acc_t a, acc_t b, acc_t c) { return muladd_expr<acc_t>(a, b, c); });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward: the gradients of the inputs flagged in `_needs`, in order, from the output's gradient
// `_grad`, in one pass over memory (muladd_grad in muladd.h computes all of them per element).
std::vector<Tensor> muladd_backward_cpu(const Tensor& _grad, const Tensor& a, const Tensor& b, const Tensor& c, std::vector<bool> _needs) {
  check_backward_inputs(_grad, a, b, c, _needs);
  kg::elementwise::CpuBackward<3> backward(_grad, _needs, {&a, &b, &c});
  THO_DISPATCH_V2(a.scalar_type(), "muladd_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // the math type: float for float16/bfloat16, else scalar_t
    backward.run<scalar_t>([](acc_t _grad, acc_t a, acc_t b, acc_t c, acc_t (&_d)[3]) {
      muladd_grad<acc_t>(_grad, a, b, c, _d);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace muladd

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("muladd(Tensor a, Tensor b, Tensor c) -> Tensor");
  // The gradients of the inputs flagged in `_needs`, in order: the op's autograd backward (ops/muladd.py).
  m.def("muladd_backward(Tensor _grad, Tensor a, Tensor b, Tensor c, bool[] _needs) -> Tensor[]");
}

// The CPU implementation. The CUDA one is registered in cuda/muladd_cuda.cpp. The stable ABI
// registers boxed kernels only (a stack of StableIValues crosses the C interface): TORCH_BOX
// generates that wrapper around the typed function.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("muladd", TORCH_BOX(&muladd::muladd_cpu));
  m.impl("muladd_backward", TORCH_BOX(&muladd::muladd_backward_cpu));
}
