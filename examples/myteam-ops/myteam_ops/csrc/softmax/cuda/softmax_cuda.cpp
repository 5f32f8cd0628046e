// softmax_cuda.cpp: the CUDA implementation of myteam::softmax, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernels are in softmax_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <optional>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../softmax_checks.h"
#include "softmax_kernel.h"

namespace softmax {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor softmax_cuda(const Tensor& x) {
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
  THO_DISPATCH_V2(x.scalar_type(), "softmax_cuda", AT_WRAP([&] {
    launch_softmax<scalar_t>(x_contig.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), rows,
                          cols, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}

}  // namespace
}  // namespace softmax

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("softmax", TORCH_BOX(&softmax::softmax_cuda));
}
