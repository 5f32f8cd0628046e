// silu_mul_cuda.cpp: the CUDA implementation of myteam::silu_mul, tensor side: the checks,
// then the package's CUDA elementwise op (../../kernelgen/elementwise_cuda_op.h: device guard, contiguous
// copies, allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The
// kernels are in silu_mul_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/elementwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../silu_mul_checks.h"
#include "silu_mul_kernel.h"

namespace silu_mul {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor silu_mul_cuda(const Tensor& x, const Tensor& y) {
  check_inputs(x, y);
  // On the GPU of x: the output, then one launch of launch_silu_mul (silu_mul_kernel.h) over
  // row-major copies of the inputs (flat indexing), on the caller's current stream.
  kg::elementwise::CudaForward<2> forward({&x, &y});
  THO_DISPATCH_V2(x.scalar_type(), "silu_mul_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_silu_mul<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward (see silu_mul_backward_cpu): the gradients of the inputs flagged in `_needs`, in order,
// all from one kernel launch.
std::vector<Tensor> silu_mul_backward_cuda(const Tensor& _grad, const Tensor& x, const Tensor& y, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, y, _needs);
  kg::elementwise::CudaBackward<2> backward(_grad, _needs, {&x, &y});
  THO_DISPATCH_V2(x.scalar_type(), "silu_mul_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(launch_silu_mul_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace silu_mul

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("silu_mul", TORCH_BOX(&silu_mul::silu_mul_cuda));
  m.impl("silu_mul_backward", TORCH_BOX(&silu_mul::silu_mul_backward_cuda));
}
