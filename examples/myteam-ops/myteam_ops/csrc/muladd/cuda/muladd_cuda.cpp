// muladd_cuda.cpp: the CUDA implementation of myteam::muladd, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernel is in muladd_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <optional>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../muladd_checks.h"
#include "muladd_kernel.h"

namespace muladd {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor muladd_cuda(const Tensor& a, const Tensor& b, const Tensor& c) {
  check_inputs(a, b, c);
  // Make the inputs' GPU current for the allocation and the launch below. Without the guard, a
  // call with tensors on cuda:1 would allocate on and launch on the current device (cuda:0).
  const int32_t device_index = a.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  // Row-major data for flat indexing; the *_contig locals keep any copies alive (see the CPU code).
  const Tensor a_contig = torch::stable::contiguous(a);
  const Tensor b_contig = torch::stable::contiguous(b);
  const Tensor c_contig = torch::stable::contiguous(c);
  Tensor out = torch::stable::empty(a.sizes(), a.scalar_type(), std::nullopt, a.device());
  const int64_t n = out.numel();
  if (n == 0) {
    return out;  // a launch with zero blocks is an error, and there is nothing to do
  }
  // The caller's current stream, never the default stream: work on stream 0 is not ordered with
  // the caller's stream, which gives silently wrong results under CUDA graphs, torch.compile's
  // reduce-overhead mode, and any code that uses side streams. (Why a C-shim call and not
  // getCurrentStream().id(): see current_cuda_stream in ../../stable_cuda.h.)
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(a.scalar_type(), "muladd_cuda", AT_WRAP([&] {
    const scalar_t* a_ptr = a_contig.const_data_ptr<scalar_t>();
    const scalar_t* b_ptr = b_contig.const_data_ptr<scalar_t>();
    const scalar_t* c_ptr = c_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    launch_muladd<scalar_t>(a_ptr, b_ptr, c_ptr, out_ptr, n, stream);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}

}  // namespace
}  // namespace muladd

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("muladd", TORCH_BOX(&muladd::muladd_cuda));
}
