// matmul_cuda.cpp: the CUDA implementation of myteam::matmul, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernels are in matmul_kernel.cu.

#include <ATen/Dispatch_v2.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <string>

#include "../matmul.h"
#include "matmul_kernel.h"

namespace matmul {
namespace {

at::Tensor matmul_cuda(const at::Tensor& a, const at::Tensor& b) {
  const Problem p = check_inputs(a, b);
  // Allocate and launch on A's GPU, whatever the current device is.
  const c10::cuda::CUDAGuard device_guard(a.device());
  at::Tensor c = empty_output(a, p);
  if (c.numel() == 0) {
    return c;  // M, N or batch is 0: nothing to compute (and a zero-size grid is a launch error)
  }
  if (p.k == 0) {
    return c.zero_();  // an empty sum is 0
  }
  // (integers are formatted with std::to_string: see shape_of in matmul.cpp)
  TORCH_CHECK(p.batch <= 65535, "matmul: batch size ", std::to_string(p.batch), " exceeds the CUDA grid limit of 65535");
  TORCH_CHECK((p.m + 127) / 128 <= 65535, "matmul: M = ", std::to_string(p.m), " exceeds the grid limit of 65535 * 128 rows");
  // Row-major data; the *_contig locals keep copies of transposed or sliced views alive.
  const at::Tensor a_contig = a.contiguous();
  const at::Tensor b_contig = b.contiguous();
  // The caller's current stream, never the default stream (CUDA graphs, side streams, compile).
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_V2(a.scalar_type(), "matmul_cuda", AT_WRAP([&] {
    launch_matmul<scalar_t>(a_contig.const_data_ptr<scalar_t>(), b_contig.const_data_ptr<scalar_t>(),
                           c.mutable_data_ptr<scalar_t>(), p, a.get_device(), stream);
  }), at::kFloat, at::kDouble, at::kHalf, at::kBFloat16);
  return c;
}

}  // namespace
}  // namespace matmul

TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("matmul", &matmul::matmul_cuda);
}
