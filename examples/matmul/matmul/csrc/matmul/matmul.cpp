// matmul.cpp: the schema of matmul::matmul (C = matmul_epilogue(A @ B)), its input checks, and
// its CPU implementation.
//
// Registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch operator:
// it dispatches on device, works under torch.compile (with the fake implementation in
// ops/matmul.py), and torch.library.opcheck can test it. STABLE_TORCH_LIBRARY_FRAGMENT, not
// STABLE_TORCH_LIBRARY: other ops and libraries share the namespace matmul, and a second
// library defining matmul in the process would abort Python at import.
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
#include <vector>

#include "../opmath.h"
#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "matmul.h"

namespace matmul {

using kernelgen::shape_of;
using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Problem check_inputs(const Tensor& a, const Tensor& b) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message; integers are formatted with std::to_string, shapes with shape_of.
  const ScalarType dtype = a.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
      dtype == ScalarType::Double ||
      dtype == ScalarType::Half ||
      dtype == ScalarType::BFloat16,
      "matmul: A has dtype ", kernelgen::dtype_name(dtype), ", but matmul supports float32, float64, float16, bfloat16");
  KG_CHECK(b.scalar_type() == dtype, "matmul: B has dtype ", kernelgen::dtype_name(b.scalar_type()),
           " but A has dtype ", kernelgen::dtype_name(dtype), "; both must have the same dtype");
  KG_CHECK(b.device() == a.device(), "matmul: B is on ", kernelgen::device_of(b.device()), " but A is on ",
           kernelgen::device_of(a.device()), "; both must be on the same device");
  const int64_t dims = a.dim();
  KG_CHECK((dims == 2 || dims == 3) && b.dim() == dims,
           "matmul: expected A and B both 2-D (M x K @ K x N) or both 3-D (batched), got A ",
           shape_of(a), " and B ", shape_of(b));
  // Dimensions are counted from the front: the stable Tensor::size(d) is not documented to accept
  // a negative d, as at::Tensor::size(-1) does.
  const int64_t a_rows = a.size(dims - 2);
  const int64_t a_cols = a.size(dims - 1);
  const int64_t b_rows = b.size(dims - 2);
  const int64_t b_cols = b.size(dims - 1);
  KG_CHECK(a_cols == b_rows, "matmul: inner dimensions differ: A ", shape_of(a), " has ",
           std::to_string(a_cols), " columns but B ", shape_of(b), " has ", std::to_string(b_rows), " rows");
  const bool batched = dims == 3;
  KG_CHECK(!batched || a.size(0) == b.size(0), "matmul: batch sizes differ: A ", shape_of(a), ", B ",
           shape_of(b), " (no broadcasting)");
  return Problem{batched ? a.size(0) : 1, a_rows, b_cols, a_cols};
}

Tensor empty_output(const Tensor& a, const Problem& p) {
  // torch::stable::empty takes the sizes as a torch::headeronly::IntHeaderOnlyArrayRef, which views
  // a std::vector (or a.sizes()); the output has A's dtype and device, row-major.
  const std::vector<int64_t> sizes =
      a.dim() == 3 ? std::vector<int64_t>{p.batch, p.m, p.n} : std::vector<int64_t>{p.m, p.n};
  return torch::stable::empty(sizes, a.scalar_type(), std::nullopt, a.device());
}

namespace {

// Multiply-adds per torch::stable::parallel_for task: small products stay on one thread.
constexpr int64_t kGrainFlops = 1 << 16;

// The CPU implementation: one output row per task, accumulated in op-math precision (float for
// float16/bfloat16, double for float64). The k-then-j loop order streams rows of B, which is
// cache- and vectorization-friendly; it is not a BLAS, and is here for correctness and portability.
Tensor matmul_cpu(const Tensor& a, const Tensor& b) {
  // Every check happens here, before the parallel loop, and nothing inside the loop may throw: the
  // loop body runs behind libtorch's C interface (torch_parallel_for), which catches an exception,
  // prints it to stderr and reports a generic failure instead of the message.
  const Problem p = check_inputs(a, b);
  Tensor c = empty_output(a, p);
  if (c.numel() == 0) {
    return c;
  }
  // Row-major data for flat indexing; the *_contig locals keep copies of strided views alive.
  const Tensor a_contig = torch::stable::contiguous(a);
  const Tensor b_contig = torch::stable::contiguous(b);
  // THO_DISPATCH_V2: AT_DISPATCH_V2's header-only twin. scalar_t is the element type of each dtype
  // listed at the end (torch::headeronly::Half and BFloat16 are c10's half types, compiled in).
  THO_DISPATCH_V2(a.scalar_type(), "matmul_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    scalar_t* c_ptr = c.mutable_data_ptr<scalar_t>();
    const int64_t rows = p.batch * p.m;
    const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, p.n * p.k));
    torch::stable::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<acc_t> acc(static_cast<size_t>(p.n));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t batch = row / p.m;
        const scalar_t* a_row = a_ptr + row * p.k;  // row = batch * M + i, so this is A[batch][i]
        const scalar_t* b_mat = b_ptr + batch * p.k * p.n;
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const acc_t a_ik = static_cast<acc_t>(a_row[kk]);
          const scalar_t* b_row = b_mat + kk * p.n;
          for (int64_t j = 0; j < p.n; ++j) {
            acc[j] += a_ik * static_cast<acc_t>(b_row[j]);
          }
        }
        scalar_t* c_row = c_ptr + row * p.n;
        for (int64_t j = 0; j < p.n; ++j) {
          c_row[j] = static_cast<scalar_t>(matmul_epilogue<acc_t>(acc[j]));
        }
      }
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return c;
}

}  // namespace
}  // namespace matmul

// The schema: name and signature, declared once for all backends.
STABLE_TORCH_LIBRARY_FRAGMENT(matmul, m) {
  m.def("matmul(Tensor a, Tensor b) -> Tensor");
}

// The CPU implementation. The CUDA one is registered in cuda/matmul_cuda.cpp. The stable ABI
// registers boxed kernels only (a stack of StableIValues crosses the C interface): TORCH_BOX
// generates that wrapper around the typed function.
STABLE_TORCH_LIBRARY_IMPL(matmul, CPU, m) {
  m.impl("matmul", TORCH_BOX(&matmul::matmul_cpu));
}
