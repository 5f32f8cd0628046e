// linear_gelu.cpp: the schema of myteam::linear_gelu (C = linear_gelu_epilogue(A @ B, bias)), its input checks, and
// its CPU implementation.
//
// Registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch operator:
// it dispatches on device, works under torch.compile (with the fake implementation in
// ops/linear_gelu.py), and torch.library.opcheck can test it. STABLE_TORCH_LIBRARY_FRAGMENT, not
// STABLE_TORCH_LIBRARY: other ops and libraries share the namespace myteam, and a second
// library defining myteam in the process would abort Python at import.
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
#include <tuple>
#include <vector>

#include "../opmath.h"
#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "linear_gelu.h"

namespace linear_gelu {

using kernelgen::shape_of;
using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Problem check_inputs(const Tensor& a, const Tensor& b, const Tensor& bias) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message; integers are formatted with std::to_string, shapes with shape_of.
  const ScalarType dtype = a.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
      dtype == ScalarType::Double ||
      dtype == ScalarType::Half ||
      dtype == ScalarType::BFloat16,
      "linear_gelu: A has dtype ", kernelgen::dtype_name(dtype), ", but linear_gelu supports float32, float64, float16, bfloat16");
  KG_CHECK(b.scalar_type() == dtype, "linear_gelu: B has dtype ", kernelgen::dtype_name(b.scalar_type()),
           " but A has dtype ", kernelgen::dtype_name(dtype), "; both must have the same dtype");
  KG_CHECK(b.device() == a.device(), "linear_gelu: B is on ", kernelgen::device_of(b.device()), " but A is on ",
           kernelgen::device_of(a.device()), "; both must be on the same device");
  const int64_t dims = a.dim();
  KG_CHECK((dims == 2 || dims == 3) && b.dim() == dims,
           "linear_gelu: expected A and B both 2-D (M x K @ K x N) or both 3-D (batched), got A ",
           shape_of(a), " and B ", shape_of(b));
  // Dimensions are counted from the front: the stable Tensor::size(d) is not documented to accept
  // a negative d, as at::Tensor::size(-1) does.
  const int64_t a_rows = a.size(dims - 2);
  const int64_t a_cols = a.size(dims - 1);
  const int64_t b_rows = b.size(dims - 2);
  const int64_t b_cols = b.size(dims - 1);
  KG_CHECK(a_cols == b_rows, "linear_gelu: inner dimensions differ: A ", shape_of(a), " has ",
           std::to_string(a_cols), " columns but B ", shape_of(b), " has ", std::to_string(b_rows), " rows");
  const bool batched = dims == 3;
  KG_CHECK(!batched || a.size(0) == b.size(0), "linear_gelu: batch sizes differ: A ", shape_of(a), ", B ",
           shape_of(b), " (no broadcasting)");
  KG_CHECK(bias.dim() == 1 && bias.size(0) == b_cols, "linear_gelu: bias must be 1-D with N = ", std::to_string(b_cols),
           " elements (B is ", shape_of(b), "), got bias ", shape_of(bias));
  KG_CHECK(bias.scalar_type() == dtype, "linear_gelu: bias has dtype ", kernelgen::dtype_name(bias.scalar_type()),
           " but A has dtype ", kernelgen::dtype_name(dtype), "; all must have the same dtype");
  KG_CHECK(bias.device() == a.device(), "linear_gelu: bias is on ", kernelgen::device_of(bias.device()), " but A is on ",
           kernelgen::device_of(a.device()), "; all must be on the same device");
  return Problem{batched ? a.size(0) : 1, a_rows, b_cols, a_cols};
}

Tensor empty_output(const Tensor& a, const Problem& p) {
  // torch::stable::empty takes the sizes as a torch::headeronly::IntHeaderOnlyArrayRef, which views
  // a std::vector (or a.sizes()); the output has A's dtype and device, row-major.
  const std::vector<int64_t> sizes =
      a.dim() == 3 ? std::vector<int64_t>{p.batch, p.m, p.n} : std::vector<int64_t>{p.m, p.n};
  return torch::stable::empty(sizes, a.scalar_type(), std::nullopt, a.device());
}

int64_t check_backward_inputs(const Tensor& _grad, const Tensor& acc, const Tensor& bias, const std::vector<bool>& _needs) {
  // The op's autograd calls the backward with the output's gradient, the accumulator its training forward
  // stored and the bias; these checks make a direct call with anything else fail clearly.
  KG_CHECK(_needs.size() == 2, "linear_gelu_backward: _needs must have 2 flags (dacc, the bias's gradient), got ",
           std::to_string(_needs.size()));
  const ScalarType dtype = _grad.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
      dtype == ScalarType::Double ||
      dtype == ScalarType::Half ||
      dtype == ScalarType::BFloat16,
      "linear_gelu_backward: grad has dtype ", kernelgen::dtype_name(dtype), ", but linear_gelu supports float32, float64, float16, bfloat16");
  KG_CHECK(_grad.dim() == 2 || _grad.dim() == 3, "linear_gelu_backward: grad must be the output's gradient, 2-D or 3-D, got ",
           shape_of(_grad));
  bool same_shape = acc.dim() == _grad.dim();
  for (int64_t d = 0; same_shape && d < _grad.dim(); ++d) {
    same_shape = acc.size(d) == _grad.size(d);
  }
  KG_CHECK(same_shape, "linear_gelu_backward: grad is ", shape_of(_grad), " but acc is ", shape_of(acc),
           "; both must have the output's shape");
  KG_CHECK(acc.scalar_type() == dtype && acc.device() == _grad.device(), "linear_gelu_backward: acc must have grad's dtype and device");
  const int64_t n = _grad.size(_grad.dim() - 1);
  KG_CHECK(bias.dim() == 1 && bias.size(0) == n, "linear_gelu_backward: bias must be 1-D with N = ", std::to_string(n),
           " elements (grad is ", shape_of(_grad), "), got bias ", shape_of(bias));
  KG_CHECK(bias.scalar_type() == dtype && bias.device() == _grad.device(), "linear_gelu_backward: bias must have grad's dtype and device");
  return n;
}

std::vector<Tensor> empty_backward_outputs(const Tensor& _grad, const std::vector<bool>& _needs, int64_t n, int64_t* rows) {
  std::vector<Tensor> _grads;
  if (_needs[0]) {
    _grads.push_back(torch::stable::empty(_grad.sizes(), _grad.scalar_type(), std::nullopt, _grad.device()));
  }
  if (_needs[1]) {
    const std::vector<int64_t> bias_shape = {n};
    _grads.push_back(torch::stable::empty(bias_shape, _grad.scalar_type(), std::nullopt, _grad.device()));
  }
  *rows = n == 0 ? 0 : _grad.numel() / n;
  if (*rows == 0 && _needs[1]) {
    torch::stable::zero_(_grads.back());  // a sum over no rows
  }
  return _grads;
}

namespace {

// Multiply-adds per torch::stable::parallel_for task: small products stay on one thread.
constexpr int64_t kGrainFlops = 1 << 16;

// The CPU implementation: one output row per task, accumulated in op-math precision (float for
// float16/bfloat16, double for float64). The k-then-j loop order streams rows of B, which is
// cache- and vectorization-friendly; it is not a BLAS, and is here for correctness and portability.
// With acc_out (the training forward, linear_gelu_with_acc), the accumulator is stored too, rounded to the
// inputs' dtype: the backward's derivatives read it.
Tensor linear_gelu_run_cpu(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor* acc_out) {
  // Every check happens here, before the parallel loop, and nothing inside the loop may throw: the
  // loop body runs behind libtorch's C interface (torch_parallel_for), which catches an exception,
  // prints it to stderr and reports a generic failure instead of the message.
  const Problem p = check_inputs(a, b, bias);
  Tensor c = empty_output(a, p);
  if (acc_out != nullptr) {
    *acc_out = empty_output(a, p);
  }
  if (c.numel() == 0) {
    return c;
  }
  // Row-major data for flat indexing; the *_contig locals keep copies of strided views alive.
  const Tensor a_contig = torch::stable::contiguous(a);
  const Tensor b_contig = torch::stable::contiguous(b);
  const Tensor bias_contig = torch::stable::contiguous(bias);
  // THO_DISPATCH_V2: AT_DISPATCH_V2's header-only twin. scalar_t is the element type of each dtype
  // listed at the end (torch::headeronly::Half and BFloat16 are c10's half types, compiled in).
  THO_DISPATCH_V2(a.scalar_type(), "linear_gelu_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    scalar_t* c_ptr = c.mutable_data_ptr<scalar_t>();
    scalar_t* acc_ptr = acc_out != nullptr ? acc_out->mutable_data_ptr<scalar_t>() : nullptr;
    const scalar_t* bias_ptr = bias_contig.const_data_ptr<scalar_t>();
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
          c_row[j] = static_cast<scalar_t>(linear_gelu_epilogue<acc_t>(acc[j], static_cast<acc_t>(bias_ptr[j])));
        }
        if (acc_ptr != nullptr) {
          for (int64_t j = 0; j < p.n; ++j) {
            acc_ptr[row * p.n + j] = static_cast<scalar_t>(acc[j]);
          }
        }
      }
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return c;
}

Tensor linear_gelu_cpu(const Tensor& a, const Tensor& b, const Tensor& bias) {
  return linear_gelu_run_cpu(a, b, bias, nullptr);
}

std::tuple<Tensor, Tensor> linear_gelu_with_acc_cpu(const Tensor& a, const Tensor& b, const Tensor& bias) {
  Tensor acc = a;  // replaced by the accumulator's allocation
  Tensor c = linear_gelu_run_cpu(a, b, bias, &acc);
  return std::make_tuple(c, acc);
}

// Output elements per torch::stable::parallel_for task of the backward.
constexpr int64_t kGrainElements = 1 << 14;

// The backward of the epilogue: dacc = _grad * d out / d acc (linear_gelu_epilogue_grad in
// linear_gelu_problem.h) where _needs[0], and the bias's gradient, the column sums of _grad * d out / d bias,
// where _needs[1]. The backward's two products (dL/dA = dacc @ B^T, dL/dB = A^T @ dacc) are
// torch.matmul's, in ops/linear_gelu.py. Each task of rows adds up its rows' contributions in its own
// partial sums, in row order, and the tasks' sums are added in order: the tasks are fixed blocks of
// rows, whatever the number of threads, so the result is bitwise reproducible.
std::vector<Tensor> linear_gelu_backward_cpu(const Tensor& _grad, const Tensor& acc, const Tensor& bias, std::vector<bool> _needs) {
  const int64_t n = check_backward_inputs(_grad, acc, bias, _needs);
  int64_t rows = 0;
  std::vector<Tensor> _grads = empty_backward_outputs(_grad, _needs, n, &rows);
  if (rows == 0 || _grads.empty()) {
    return _grads;
  }
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor acc_contig = torch::stable::contiguous(acc);
  const Tensor bias_contig = torch::stable::contiguous(bias);
  THO_DISPATCH_V2(_grad.scalar_type(), "linear_gelu_backward_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;
    const scalar_t* grad_ptr = _grad_contig.const_data_ptr<scalar_t>();
    const scalar_t* acc_ptr = acc_contig.const_data_ptr<scalar_t>();
    const scalar_t* bias_ptr = bias_contig.const_data_ptr<scalar_t>();
    scalar_t* dacc = _needs[0] ? _grads.front().mutable_data_ptr<scalar_t>() : nullptr;
    const int64_t grain = std::max<int64_t>(1, kGrainElements / n);
    const int64_t tasks = (rows + grain - 1) / grain;
    scalar_t* dbias = _needs[1] ? _grads.back().mutable_data_ptr<scalar_t>() : nullptr;
    std::vector<acc_t> partial(dbias != nullptr ? static_cast<std::size_t>(tasks * n) : 0, acc_t(0));
    torch::stable::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        for (int64_t row = task * grain; row < std::min(rows, (task + 1) * grain); ++row) {
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = row * n + j;
            acc_t d[2];
            linear_gelu_epilogue_grad<acc_t>(static_cast<acc_t>(grad_ptr[i]), static_cast<acc_t>(acc_ptr[i]), static_cast<acc_t>(bias_ptr[j]), d);
            if (dacc != nullptr) {
              dacc[i] = static_cast<scalar_t>(d[0]);
            }
            if (dbias != nullptr) {
              partial[static_cast<std::size_t>(task * n + j)] += d[1];
            }
          }
        }
      }
    });
    if (dbias != nullptr) {
      for (int64_t j = 0; j < n; ++j) {
        acc_t total(0);
        for (int64_t task = 0; task < tasks; ++task) {
          total += partial[static_cast<std::size_t>(task * n + j)];
        }
        dbias[j] = static_cast<scalar_t>(total);
      }
    }
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace linear_gelu

// The schema: name and signature, declared once for all backends.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("linear_gelu(Tensor a, Tensor b, Tensor bias) -> Tensor");
  // The training forward: the output, and the accumulator A @ B (rounded to the inputs' dtype) that the
  // backward reads. ops/linear_gelu.py calls it when a gradient is wanted.
  m.def("linear_gelu_with_acc(Tensor a, Tensor b, Tensor bias) -> (Tensor, Tensor)");
  // The epilogue's backward: dacc (the matrix the backward's two products read) and the bias's gradient, those flagged
  // in `_needs`, in order: the op's autograd backward (ops/linear_gelu.py).
  m.def("linear_gelu_backward(Tensor _grad, Tensor acc, Tensor bias, bool[] _needs) -> Tensor[]");
}

// The CPU implementation. The CUDA one is registered in cuda/linear_gelu_cuda.cpp. The stable ABI
// registers boxed kernels only (a stack of StableIValues crosses the C interface): TORCH_BOX
// generates that wrapper around the typed function.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("linear_gelu", TORCH_BOX(&linear_gelu::linear_gelu_cpu));
  m.impl("linear_gelu_with_acc", TORCH_BOX(&linear_gelu::linear_gelu_with_acc_cpu));
  m.impl("linear_gelu_backward", TORCH_BOX(&linear_gelu::linear_gelu_backward_cpu));
}
