// log_softmax_cuda.cpp: the CUDA implementation of myteam::log_softmax, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernels are in log_softmax_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <optional>
#include <vector>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../log_softmax_checks.h"
#include "log_softmax_kernel.h"

namespace log_softmax {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor log_softmax_cuda(const Tensor& x) {
  check_inputs(x);
  // Make the inputs' GPU current for the allocation and the launch below. Without the guard, a
  // call with tensors on cuda:1 would allocate on and launch on the current device (cuda:0).
  const int32_t device_index = x.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  // Row-major data; the *_contig locals keep any copies alive during the launch.
  const Tensor x_contig = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t cols = x.size(x.dim() - 1);
  if (out.numel() == 0) {
    return out;  // no rows, or empty rows: a launch with zero blocks is an error, and there is nothing to do
  }
  const int64_t rows = out.numel() / cols;
  // The caller's current stream, never the default stream (CUDA graphs, side streams, torch.compile's
  // reduce-overhead mode all depend on it; see current_cuda_stream in ../../stable_cuda.h).
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(x.scalar_type(), "log_softmax_cuda", AT_WRAP([&] {
    launch_log_softmax<scalar_t>(x_contig.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), rows,
                              cols, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}


// The backward (see log_softmax_backward_cpu): one kernel launch computes every gradient asked for;
// a second, small one adds up each weight's partial sums.
std::vector<Tensor> log_softmax_backward_cuda(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  const int32_t device_index = x.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor x_contig = torch::stable::contiguous(x);
  const Tensor* _args[1] = {&x};
  std::vector<Tensor> _grads;
  for (int _j = 0; _j < 1; ++_j) {
    if (_needs[_j]) {
      _grads.push_back(torch::stable::empty(_args[_j]->sizes(), x.scalar_type(), std::nullopt, x.device()));
    }
  }
  const int64_t cols = x.size(x.dim() - 1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0 || _grads.empty()) {
    for (int _j = 0, _k = 0; _j < 1; ++_j) {
      if (_needs[_j]) {
        if (_j >= 1) {
          torch::stable::zero_(_grads[_k]);  // a sum over no rows
        }
        ++_k;
      }
    }
    return _grads;  // nothing to launch: a launch with zero blocks is an error
  }
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(x.scalar_type(), "log_softmax_backward_cuda", AT_WRAP([&] {
    using acc_t = partial_t<scalar_t>;  // the math type (log_softmax_kernel.h)
    // Argument j's gradient, or null where it is not asked for (the kernel then writes none).
    scalar_t* _out_ptr[1] = {};
    int _sums = 0;  // weights whose gradient is asked for
    for (int _j = 0, _k = 0; _j < 1; ++_j) {
      if (_needs[_j]) {
        _out_ptr[_j] = _grads[_k++].mutable_data_ptr<scalar_t>();
        _sums += _j >= 1 ? 1 : 0;
      }
    }
    // The weights' partial sums, one row per slot of the launch: a small buffer (the slots fill the GPU
    // once), freed when this function returns; the caching allocator keeps it for the stream's later work.
    Tensor _partial;
    acc_t* partial = nullptr;
    if (_sums > 0) {
      const int64_t slots = log_softmax_backward_slots<scalar_t>(rows, cols);
      const std::vector<int64_t> shape = {_sums * slots * cols};
      _partial = torch::stable::empty(shape, sizeof(acc_t) == 8 ? ScalarType::Double : ScalarType::Float, std::nullopt,
                                      x.device());
      partial = _partial.mutable_data_ptr<acc_t>();
    }
    launch_log_softmax_backward<scalar_t>(_grad_contig.const_data_ptr<scalar_t>(), x_contig.const_data_ptr<scalar_t>(), _out_ptr,
                                           partial, rows, cols, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace log_softmax

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("log_softmax", TORCH_BOX(&log_softmax::log_softmax_cuda));
  m.impl("log_softmax_backward", TORCH_BOX(&log_softmax::log_softmax_backward_cuda));
}
