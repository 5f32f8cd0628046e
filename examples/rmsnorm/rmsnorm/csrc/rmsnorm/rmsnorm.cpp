// rmsnorm.cpp: the schema of rmsnorm::rmsnorm, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/rmsnorm.py), and torch.library.opcheck can test it.
// STABLE_TORCH_LIBRARY_FRAGMENT, not STABLE_TORCH_LIBRARY: every op of the package, and any other
// library in the process, may add ops to the namespace rmsnorm.
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

#include "../kernelgen/rowwise_cpu.h"
#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "rmsnorm.h"
#include "rmsnorm_checks.h"

namespace rmsnorm {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x, const Tensor& w) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "rmsnorm: x has dtype ", kernelgen::dtype_name(dtype), ", but rmsnorm supports float32, float64, float16, bfloat16");
  KG_CHECK(x.dim() >= 1, "rmsnorm: x is a 0-dimensional tensor; it needs at least one dimension (the row)");
  // A weight holds one value per column of a row: 1-D, as long as a row, broadcast over the rows.
  const int64_t cols = x.size(x.dim() - 1);
  const std::pair<const char*, const Tensor*> weights[] = {
      {"w", &w}};
  for (const auto& [name, t] : weights) {
    KG_CHECK(t->dim() == 1 && t->size(0) == cols, "rmsnorm: weight ", name, " has shape ", kernelgen::shape_of(*t),
             " but must be [", std::to_string(cols), "]: 1-D, one value per element of a row of x (shape ", kernelgen::shape_of(x), ")");
    KG_CHECK(t->scalar_type() == dtype, "rmsnorm: weight ", name, " has dtype ", kernelgen::dtype_name(t->scalar_type()),
             " but x has dtype ", kernelgen::dtype_name(dtype), "; weights must have the inputs' dtype");
    KG_CHECK(t->device() == x.device(), "rmsnorm: weight ", name, " is on ", kernelgen::device_of(t->device()),
             " but x is on ", kernelgen::device_of(x.device()), "; weights must be on the inputs' device");
  }
}

namespace {

// Rows per task of torch::stable::parallel_for, chosen so that a task holds about this many elements:
// a small tensor stays on one thread (spawning work costs microseconds), a large one spreads over all cores.
constexpr int64_t kGrainElements = 32768;

Tensor rmsnorm_cpu(const Tensor& x, const Tensor& w) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x, w);
  // Row-major (contiguous) data; the *_contig locals keep any copies alive while their pointers are in use.
  const Tensor x_contig = torch::stable::contiguous(x);
  const Tensor w_contig = torch::stable::contiguous(w);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t cols = x.size(x.dim() - 1);
  if (out.numel() == 0) {
    return out;  // no rows, or rows of length 0: nothing to compute
  }
  const int64_t rows = out.numel() / cols;
  THO_DISPATCH_V2(x.scalar_type(), "rmsnorm_cpu", AT_WRAP([&] {
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    const scalar_t* w_ptr = w_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    torch::stable::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      // The package's CPU loop (../kernelgen/rowwise_cpu.h) over this op's steps (Op in rmsnorm.h).
      kg::rowwise::CpuRows<Op, scalar_t>::run(x_ptr, w_ptr, out_ptr, begin, end, cols);
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}

}  // namespace
}  // namespace rmsnorm

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(rmsnorm, m) {
  m.def("rmsnorm(Tensor x, Tensor w) -> Tensor");
}

// The CPU implementation (the CUDA one is registered in cuda/rmsnorm_cuda.cpp), boxed by TORCH_BOX.
STABLE_TORCH_LIBRARY_IMPL(rmsnorm, CPU, m) {
  m.impl("rmsnorm", TORCH_BOX(&rmsnorm::rmsnorm_cpu));
}
