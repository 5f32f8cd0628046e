// muladd_cuda.cpp: the CUDA implementation of myteam::muladd, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernel is in muladd_kernel.cu.

#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../muladd_checks.h"
#include "muladd_kernel.h"

namespace muladd {
namespace {

at::Tensor muladd_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  check_inputs(a, b, c);
  // Make the inputs' GPU current for the allocation and the launch below. Without the guard, a
  // call with tensors on cuda:1 would allocate on and launch on the current device (cuda:0).
  const c10::cuda::CUDAGuard device_guard(a.device());
  // Row-major data for flat indexing; the *_contig locals keep any copies alive (see the CPU code).
  const at::Tensor a_contig = a.contiguous();
  const at::Tensor b_contig = b.contiguous();
  const at::Tensor c_contig = c.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;  // a launch with zero blocks is an error, and there is nothing to do
  }
  // The caller's current stream, never the default stream: work on stream 0 is not ordered with
  // the caller's stream, which gives silently wrong results under CUDA graphs, torch.compile's
  // reduce-overhead mode, and any code that uses side streams.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(a.scalar_type(), "muladd_cuda", AT_WRAP([&] {
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    const scalar_t* c_ptr = c_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    launch_muladd<scalar_t>(a_ptr, b_ptr, c_ptr, out_ptr, n, stream);
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return out;
}

}  // namespace
}  // namespace muladd

TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("muladd", &muladd::muladd_cuda);
}
