// muladd.cpp: the schema of myteam::muladd, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/muladd.py), and torch.library.opcheck can test it.
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

#include "muladd.h"
#include "muladd_checks.h"

namespace muladd {
namespace {

// "[2, 3]". Shapes and integers are formatted with std::to_string, never streamed into
// TORCH_CHECK's message: streaming an integer or t.sizes() there crashed (segfault) in extensions
// built with g++ 13 against torch 2.11 on our GPU machine.
std::string shape_of(const at::Tensor& t) {
  std::string text = "[";
  for (int64_t d = 0; d < t.dim(); ++d) {
    text += (d ? ", " : "") + std::to_string(t.size(d));
  }
  return text + "]";
}

}  // namespace

void check_inputs(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  const at::ScalarType dtype = a.scalar_type();
  TORCH_CHECK(
      dtype == at::kFloat ||
          dtype == at::kDouble ||
          dtype == at::kHalf ||
          dtype == at::kBFloat16,
      "muladd: a has dtype ", dtype, ", but muladd supports float32, float64, float16, bfloat16");
  // Every other input must match a: the op neither broadcasts nor promotes types, so
  // a mismatch is a caller bug and is reported rather than silently converted.
  const std::pair<const char*, const at::Tensor*> others[] = {
      {"b", &b}, {"c", &c}};
  for (const auto& [name, t] : others) {
    TORCH_CHECK(t->device() == a.device(), "muladd: ", name, " is on ", t->device(),
                " but a is on ", a.device(), "; all inputs must be on the same device");
    TORCH_CHECK(t->scalar_type() == dtype, "muladd: ", name, " has dtype ", t->scalar_type(),
                " but a has dtype ", dtype, "; all inputs must have the same dtype");
    TORCH_CHECK(t->sizes() == a.sizes(), "muladd: ", name, " has shape ", shape_of(*t),
                " but a has shape ", shape_of(a), "; all inputs must have the same shape (no broadcasting)");
  }
}

namespace {

// Elements per task of at::parallel_for: big enough that a small tensor stays on one thread
// (spawning work costs microseconds), small enough to spread a large one over all cores.
constexpr int64_t kGrainSize = 32768;

at::Tensor muladd_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  check_inputs(a, b, c);
  // The loop walks flat memory, so it needs row-major (contiguous) data. contiguous() returns the
  // tensor itself when it already is, and a copy otherwise (a transposed or sliced view); the
  // *_contig locals keep those copies alive while their data pointers are in use.
  const at::Tensor a_contig = a.contiguous();
  const at::Tensor b_contig = b.contiguous();
  const at::Tensor c_contig = c.contiguous();
  // at::empty rather than at::empty_like: empty_like keeps the input's strides, so a transposed
  // input would give a transposed output, and the loop below writes row-major.
  at::Tensor out = at::empty(a.sizes(), a.options());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;
  }
  AT_DISPATCH_V2(a.scalar_type(), "muladd_cpu", AT_WRAP([&] {
    using acc_t = at::opmath_type<scalar_t>;  // float for float16/bfloat16, else scalar_t
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    const scalar_t* c_ptr = c_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        out_ptr[i] = static_cast<scalar_t>(muladd_expr<acc_t>(
            static_cast<acc_t>(a_ptr[i]), static_cast<acc_t>(b_ptr[i]), static_cast<acc_t>(c_ptr[i])));
      }
    });
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return out;
}

}  // namespace
}  // namespace muladd

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("muladd(Tensor a, Tensor b, Tensor c) -> Tensor");
}

// The CPU implementation. The CUDA one is registered in cuda/muladd_cuda.cpp.
TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("muladd", &muladd::muladd_cpu);
}
