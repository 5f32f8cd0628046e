// linear_gelu_cuda.cpp: the CUDA implementation of myteam::linear_gelu, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernels are in linear_gelu_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <string>
#include <tuple>
#include <vector>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../linear_gelu.h"
#include "linear_gelu_kernel.h"

namespace linear_gelu {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

// float32 and float64: A @ B by cuBLAS (kernelgen::library_product in ../../stable_cuda.h, which
// follows torch.backends.cuda.matmul's precision settings as torch.matmul does), then the epilogue in a
// pass of its own. At full precision cuBLAS's product outruns the package's SIMT kernel (float32: about
// 2x at 4096^3; float64: on the FP64 tensor cores).
// The extra pass reads and writes C once, a few per cent of the product. The inference forward applies
// the epilogue in place, over the product's own allocation; the training forward keeps the product as the
// accumulator and writes C beside it.
Tensor linear_gelu_after_library_product(const Tensor& a, const Tensor& b, const Tensor& bias, const Problem& p, int32_t device_index, Tensor* acc_out) {
  const Tensor acc = kernelgen::library_product(a, b);
  Tensor c = acc_out != nullptr ? torch::stable::empty_like(acc) : acc;
  if (acc_out != nullptr) {
    *acc_out = acc;
  }
  if (c.numel() == 0) {
    return c;  // M, N or batch is 0: nothing to compute (and a zero-size grid is a launch error)
  }
  const Tensor bias_contig = torch::stable::contiguous(bias);
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(a.scalar_type(), "linear_gelu_epilogue_cuda", AT_WRAP([&] {
    launch_linear_gelu_epilogue<scalar_t>(acc.const_data_ptr<scalar_t>(), bias_contig.const_data_ptr<scalar_t>(), c.mutable_data_ptr<scalar_t>(),
                                  c.numel(), p.n, device_index, stream);
  }), ScalarType::Float, ScalarType::Double);
  return c;
}

// C = linear_gelu_epilogue(A @ B, bias); with acc_out (the training forward, linear_gelu_with_acc), the
// accumulator A @ B too, rounded to the inputs' dtype, which the backward's derivatives read. One pass
// either way for float16 and bfloat16: the kernels store both where they store C.
Tensor linear_gelu_run(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor* acc_out) {
  const Problem p = check_inputs(a, b, bias);
  // Allocate and launch on A's GPU, whatever the current device is.
  const int32_t device_index = a.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  if (a.scalar_type() == ScalarType::Float || a.scalar_type() == ScalarType::Double) {
    return linear_gelu_after_library_product(a, b, bias, p, device_index, acc_out);
  }
  Tensor c = empty_output(a, p);
  if (acc_out != nullptr) {
    *acc_out = empty_output(a, p);
  }
  if (c.numel() == 0) {
    return c;  // M, N or batch is 0: nothing to compute (and a zero-size grid is a launch error)
  }
  // (integers are formatted with std::to_string: see shape_of in ../../stable_utils.h)
  KG_CHECK(p.batch <= 65535, "linear_gelu: batch size ", std::to_string(p.batch), " exceeds the CUDA grid limit of 65535");
  KG_CHECK((p.m + 127) / 128 <= 65535, "linear_gelu: M = ", std::to_string(p.m), " exceeds the grid limit of 65535 * 128 rows");
  // Row-major data; the *_contig locals keep copies of transposed or sliced views alive.
  const Tensor a_contig = torch::stable::contiguous(a);
  const Tensor b_contig = torch::stable::contiguous(b);
  const Tensor bias_contig = torch::stable::contiguous(bias);
  // The caller's current stream, never the default stream (CUDA graphs, side streams, compile).
  // Why a C-shim call and not getCurrentStream().id(): see current_cuda_stream in ../../stable_cuda.h.
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(a.scalar_type(), "linear_gelu_cuda", AT_WRAP([&] {
    launch_linear_gelu<scalar_t>(a_contig.const_data_ptr<scalar_t>(), b_contig.const_data_ptr<scalar_t>(),
                           bias_contig.const_data_ptr<scalar_t>(),
                           c.mutable_data_ptr<scalar_t>(), acc_out != nullptr ? acc_out->mutable_data_ptr<scalar_t>() : nullptr, p, device_index, stream);
  }), ScalarType::Half, ScalarType::BFloat16);
  return c;
}

Tensor linear_gelu_cuda(const Tensor& a, const Tensor& b, const Tensor& bias) {
  return linear_gelu_run(a, b, bias, nullptr);
}

std::tuple<Tensor, Tensor> linear_gelu_with_acc_cuda(const Tensor& a, const Tensor& b, const Tensor& bias) {
  Tensor acc = a;  // replaced by the accumulator's allocation
  Tensor c = linear_gelu_run(a, b, bias, &acc);
  return std::make_tuple(c, acc);
}

// The backward (see linear_gelu_backward_cpu): one pass over the output's gradient and the stored accumulator
// computes dacc and each column's partial sums of the bias's gradient; a second, small pass adds the
// partial sums in order.
std::vector<Tensor> linear_gelu_backward_cuda(const Tensor& _grad, const Tensor& acc, const Tensor& bias, std::vector<bool> _needs) {
  const int64_t n = check_backward_inputs(_grad, acc, bias, _needs);
  const int32_t device_index = _grad.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  int64_t rows = 0;
  std::vector<Tensor> _grads = empty_backward_outputs(_grad, _needs, n, &rows);
  if (rows == 0 || _grads.empty()) {
    return _grads;  // nothing to launch: a launch with zero blocks is an error
  }
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor acc_contig = torch::stable::contiguous(acc);
  const Tensor bias_contig = torch::stable::contiguous(bias);
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(_grad.scalar_type(), "linear_gelu_backward_cuda", AT_WRAP([&] {
    using sum_t = partial_t<scalar_t>;  // the math type (linear_gelu_kernel.h)
    scalar_t* dacc = _needs[0] ? _grads.front().mutable_data_ptr<scalar_t>() : nullptr;
    scalar_t* dbias = _needs[1] ? _grads.back().mutable_data_ptr<scalar_t>() : nullptr;
    // The bias's partial sums, one row per slot of rows: a small buffer, freed when this function
    // returns (the caching allocator keeps it for the stream's later work).
    Tensor _partial;
    sum_t* partial = nullptr;
    if (dbias != nullptr) {
      const std::vector<int64_t> shape = {linear_gelu_backward_slots<scalar_t>(rows, n, device_index) * n};
      _partial = torch::stable::empty(shape, sizeof(sum_t) == 8 ? ScalarType::Double : ScalarType::Float, std::nullopt,
                                      _grad.device());
      partial = _partial.mutable_data_ptr<sum_t>();
    }
    launch_linear_gelu_backward<scalar_t>(_grad_contig.const_data_ptr<scalar_t>(), acc_contig.const_data_ptr<scalar_t>(),
                                  bias_contig.const_data_ptr<scalar_t>(), dacc, dbias, partial, rows, n, device_index, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace linear_gelu

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("linear_gelu", TORCH_BOX(&linear_gelu::linear_gelu_cuda));
  m.impl("linear_gelu_with_acc", TORCH_BOX(&linear_gelu::linear_gelu_with_acc_cuda));
  m.impl("linear_gelu_backward", TORCH_BOX(&linear_gelu::linear_gelu_backward_cuda));
}
