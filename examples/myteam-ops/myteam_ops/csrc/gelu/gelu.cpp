// gelu.cpp: the schema of myteam::gelu, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/gelu.py), and torch.library.opcheck can test it.
// TORCH_LIBRARY_FRAGMENT, not TORCH_LIBRARY: every op of the package, and any other library in the
// process, may add ops to the namespace myteam. A second TORCH_LIBRARY(myteam, ...)
// anywhere in the process would abort Python at import (it throws from a static initializer).
//
// Only the headers that are used are included. <torch/extension.h> would pull in all of ATen and
// pybind11 and triple the compile time.

#include <ATen/Dispatch_v2.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <string>

#include "gelu.h"
#include "gelu_checks.h"

namespace gelu {

void check_inputs(const at::Tensor& x) {
  const at::ScalarType dtype = x.scalar_type();
  TORCH_CHECK(
      dtype == at::kFloat ||
          dtype == at::kDouble ||
          dtype == at::kHalf ||
          dtype == at::kBFloat16,
      "gelu: x has dtype ", dtype, ", but gelu supports float32, float64, float16, bfloat16");
}

namespace {

// Elements per task of at::parallel_for: big enough that a small tensor stays on one thread
// (spawning work costs microseconds), small enough to spread a large one over all cores.
constexpr int64_t kGrainSize = 32768;

at::Tensor gelu_cpu(const at::Tensor& x) {
  check_inputs(x);
  // The loop walks flat memory, so it needs row-major (contiguous) data. contiguous() returns the
  // tensor itself when it already is, and a copy otherwise (a transposed or sliced view); the
  // *_contig locals keep those copies alive while their data pointers are in use.
  const at::Tensor x_contig = x.contiguous();
  // at::empty rather than at::empty_like: empty_like keeps the input's strides, so a transposed
  // input would give a transposed output, and the loop below writes row-major.
  at::Tensor out = at::empty(x.sizes(), x.options());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;
  }
  AT_DISPATCH_V2(x.scalar_type(), "gelu_cpu", AT_WRAP([&] {
    using acc_t = at::opmath_type<scalar_t>;  // float for float16/bfloat16, else scalar_t
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out_ptr[i] = static_cast<scalar_t>(gelu_expr<acc_t>(
            static_cast<acc_t>(x_ptr[i])));
      }
    });
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return out;
}

}  // namespace
}  // namespace gelu

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("gelu(Tensor x) -> Tensor");
}

// The CPU implementation. The CUDA one is registered in cuda/gelu_cuda.cpp.
TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("gelu", &gelu::gelu_cpu);
}
