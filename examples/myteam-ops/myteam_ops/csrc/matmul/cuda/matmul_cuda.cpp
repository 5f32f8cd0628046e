// matmul_cuda.cpp: the CUDA implementation of myteam::matmul, tensor side: checks,
// device guard, allocation, stream and dtype dispatch. The kernels are in matmul_kernel.cu.
// Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <string>

#include "../../stable_cuda.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../matmul.h"
#include "matmul_kernel.h"

namespace matmul {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor matmul_cuda(const Tensor& a, const Tensor& b) {
  const Problem p = check_inputs(a, b);
  // Allocate and launch on A's GPU, whatever the current device is.
  const int32_t device_index = a.get_device_index();
  const kernelgen::DeviceGuard device_guard(device_index);
  if (a.scalar_type() == ScalarType::Float || a.scalar_type() == ScalarType::Double) {
    // cuBLAS's product (see matmul_kernel.cu): at full float32 and float64 precision it outruns
    // the SIMT kernel, and without an epilogue there is nothing to fuse.
    return kernelgen::library_product(a, b);
  }
  Tensor c = empty_output(a, p);
  if (c.numel() == 0) {
    return c;  // M, N or batch is 0: nothing to compute (and a zero-size grid is a launch error)
  }
  if (p.k == 0) {
    return torch::stable::zero_(c);  // an empty sum is 0
  }
  // (integers are formatted with std::to_string: see shape_of in ../../stable_utils.h)
  KG_CHECK(p.batch <= 65535, "matmul: batch size ", std::to_string(p.batch), " exceeds the CUDA grid limit of 65535");
  KG_CHECK((p.m + 127) / 128 <= 65535, "matmul: M = ", std::to_string(p.m), " exceeds the grid limit of 65535 * 128 rows");
  // Row-major data; the *_contig locals keep copies of transposed or sliced views alive.
  const Tensor a_contig = torch::stable::contiguous(a);
  const Tensor b_contig = torch::stable::contiguous(b);
  // The caller's current stream, never the default stream (CUDA graphs, side streams, compile).
  // Why a C-shim call and not getCurrentStream().id(): see current_cuda_stream in ../../stable_cuda.h.
  const cudaStream_t stream = kernelgen::current_cuda_stream(device_index);
  THO_DISPATCH_V2(a.scalar_type(), "matmul_cuda", AT_WRAP([&] {
    launch_matmul<scalar_t>(a_contig.const_data_ptr<scalar_t>(), b_contig.const_data_ptr<scalar_t>(),
                           c.mutable_data_ptr<scalar_t>(), p, device_index, stream);
  }), ScalarType::Half, ScalarType::BFloat16);
  return c;
}

}  // namespace
}  // namespace matmul

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("matmul", TORCH_BOX(&matmul::matmul_cuda));
}
