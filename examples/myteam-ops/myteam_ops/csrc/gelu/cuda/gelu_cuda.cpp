// gelu_cuda.cpp: the CUDA implementation of myteam::gelu, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernel is in gelu_kernel.cu.

#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../gelu_checks.h"
#include "gelu_kernel.h"

namespace gelu {
namespace {

at::Tensor gelu_cuda(const at::Tensor& x) {
  check_inputs(x);
  // Make the inputs' GPU current for the allocation and the launch below. Without the guard, a
  // call with tensors on cuda:1 would allocate on and launch on the current device (cuda:0).
  const c10::cuda::CUDAGuard device_guard(x.device());
  // Row-major data for flat indexing; the *_contig locals keep any copies alive (see the CPU code).
  const at::Tensor x_contig = x.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;  // a launch with zero blocks is an error, and there is nothing to do
  }
  // The caller's current stream, never the default stream: work on stream 0 is not ordered with
  // the caller's stream, which gives silently wrong results under CUDA graphs, torch.compile's
  // reduce-overhead mode, and any code that uses side streams.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(x.scalar_type(), "gelu_cuda", AT_WRAP([&] {
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    launch_gelu<scalar_t>(x_ptr, out_ptr, n, stream);
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return out;
}

}  // namespace
}  // namespace gelu

TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("gelu", &gelu::gelu_cuda);
}
