// matmul.cpp: the schema of matmul::matmul (C = A @ B), its input checks, and
// its CPU implementation.
//
// Registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch operator:
// it dispatches on device, works under torch.compile (with the fake implementation in
// ops/matmul.py), and torch.library.opcheck can test it. TORCH_LIBRARY_FRAGMENT, not
// TORCH_LIBRARY: other ops and libraries share the namespace matmul, and a second
// TORCH_LIBRARY(matmul, ...) in the process would abort Python at import. Only the headers
// that are used are included.

#include <ATen/Dispatch_v2.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <vector>

#include "matmul.h"

namespace matmul {
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

Problem check_inputs(const at::Tensor& a, const at::Tensor& b) {
  const at::ScalarType dtype = a.scalar_type();
  TORCH_CHECK(
      dtype == at::kFloat ||
      dtype == at::kDouble ||
      dtype == at::kHalf ||
      dtype == at::kBFloat16,
      "matmul: A has dtype ", dtype, ", but matmul supports float32, float64, float16, bfloat16");
  TORCH_CHECK(b.scalar_type() == dtype, "matmul: B has dtype ", b.scalar_type(), " but A has dtype ", dtype,
              "; both must have the same dtype");
  TORCH_CHECK(b.device() == a.device(), "matmul: B is on ", b.device(), " but A is on ", a.device(),
              "; both must be on the same device");
  TORCH_CHECK((a.dim() == 2 || a.dim() == 3) && b.dim() == a.dim(),
              "matmul: expected A and B both 2-D (M x K @ K x N) or both 3-D (batched), got A ",
              shape_of(a), " and B ", shape_of(b));
  TORCH_CHECK(a.size(-1) == b.size(-2), "matmul: inner dimensions differ: A ", shape_of(a), " has ",
              std::to_string(a.size(-1)), " columns but B ", shape_of(b), " has ", std::to_string(b.size(-2)), " rows");
  const bool batched = a.dim() == 3;
  TORCH_CHECK(!batched || a.size(0) == b.size(0), "matmul: batch sizes differ: A ", shape_of(a), ", B ",
              shape_of(b), " (no broadcasting)");
  return Problem{batched ? a.size(0) : 1, a.size(-2), b.size(-1), a.size(-1)};
}

at::Tensor empty_output(const at::Tensor& a, const Problem& p) {
  if (a.dim() == 3) {
    return at::empty({p.batch, p.m, p.n}, a.options());
  }
  return at::empty({p.m, p.n}, a.options());
}

namespace {

// Multiply-adds per at::parallel_for task: small products stay on one thread.
constexpr int64_t kGrainFlops = 1 << 16;

// The CPU implementation: one output row per task, accumulated in op-math precision (float for
// float16/bfloat16, double for float64). The k-then-j loop order streams rows of B, which is
// cache- and vectorization-friendly; it is not a BLAS, and is here for correctness and portability.
at::Tensor matmul_cpu(const at::Tensor& a, const at::Tensor& b) {
  const Problem p = check_inputs(a, b);
  at::Tensor c = empty_output(a, p);
  if (c.numel() == 0) {
    return c;
  }
  // Row-major data for flat indexing; the *_contig locals keep copies of strided views alive.
  const at::Tensor a_contig = a.contiguous();
  const at::Tensor b_contig = b.contiguous();
  AT_DISPATCH_V2(a.scalar_type(), "matmul_cpu", AT_WRAP([&] {
    using acc_t = at::opmath_type<scalar_t>;
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    scalar_t* c_ptr = c.mutable_data_ptr<scalar_t>();
    const int64_t rows = p.batch * p.m;
    const int64_t grain = std::max<int64_t>(1, kGrainFlops / std::max<int64_t>(1, p.n * p.k));
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
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
          c_row[j] = static_cast<scalar_t>(acc[j]);
        }
      }
    });
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return c;
}

}  // namespace
}  // namespace matmul

// The schema: name and signature, declared once for all backends.
TORCH_LIBRARY_FRAGMENT(matmul, m) {
  m.def("matmul(Tensor a, Tensor b) -> Tensor");
}

// The CPU implementation. The CUDA one is registered in cuda/matmul_cuda.cpp.
TORCH_LIBRARY_IMPL(matmul, CPU, m) {
  m.impl("matmul", &matmul::matmul_cpu);
}
