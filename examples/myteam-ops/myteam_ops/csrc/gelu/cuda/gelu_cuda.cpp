// gelu_cuda.cpp: the CUDA implementation of myteam::gelu, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernel is in gelu_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <optional>
#include <vector>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../gelu_checks.h"
#include "gelu_kernel.h"

namespace gelu {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor gelu_cuda(const Tensor& x) {
  check_inputs(x);
  // Make the inputs' GPU current for the allocation and the launch below. Without the guard, a
  // call with tensors on cuda:1 would allocate on and launch on the current device (cuda:0).
  const int32_t device_index = x.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  // Row-major data for flat indexing; the *_contig locals keep any copies alive (see the CPU code).
  const Tensor x_contig = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;  // a launch with zero blocks is an error, and there is nothing to do
  }
  // The caller's current stream, never the default stream: work on stream 0 is not ordered with
  // the caller's stream, which gives silently wrong results under CUDA graphs, torch.compile's
  // reduce-overhead mode, and any code that uses side streams. (Why a C-shim call and not
  // getCurrentStream().id(): see current_cuda_stream in ../../stable_cuda.h.)
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(x.scalar_type(), "gelu_cuda", AT_WRAP([&] {
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    launch_gelu<scalar_t>(x_ptr, out_ptr, n, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}

// The backward (see gelu_backward_cpu): one kernel launch computes every gradient asked for.
std::vector<Tensor> gelu_backward_cuda(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  const int32_t device_index = x.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  const Tensor _grad_contig = torch::stable::contiguous(_grad);
  const Tensor x_contig = torch::stable::contiguous(x);
  std::vector<Tensor> _grads;
  for (int _j = 0; _j < 1; ++_j) {
    if (_needs[_j]) {
      _grads.push_back(torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device()));
    }
  }
  const int64_t _n = _grad.numel();
  if (_n == 0 || _grads.empty()) {
    return _grads;
  }
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(x.scalar_type(), "gelu_backward_cuda", AT_WRAP([&] {
    // Input j's gradient, or null where it is not asked for (the kernel then writes none).
    scalar_t* _out_ptr[1] = {};
    for (int _j = 0, _k = 0; _j < 1; ++_j) {
      if (_needs[_j]) {
        _out_ptr[_j] = _grads[_k++].mutable_data_ptr<scalar_t>();
      }
    }
    launch_gelu_backward<scalar_t>(_grad_contig.const_data_ptr<scalar_t>(), x_contig.const_data_ptr<scalar_t>(), _out_ptr[0], _n, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return _grads;
}

}  // namespace
}  // namespace gelu

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("gelu", TORCH_BOX(&gelu::gelu_cuda));
  m.impl("gelu_backward", TORCH_BOX(&gelu::gelu_backward_cuda));
}
