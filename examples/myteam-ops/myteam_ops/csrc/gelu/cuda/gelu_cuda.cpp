// gelu_cuda.cpp: the CUDA implementation of myteam::gelu, tensor side: the checks,
// then the package's CUDA elementwise op (../../kernelgen/elementwise_cuda_op.h: device guard, contiguous
// copies, allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The
// kernels are in gelu_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/elementwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../gelu_checks.h"
#include "gelu_kernel.h"

namespace gelu {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor gelu_cuda(const Tensor& x) {
  check_inputs(x);
  // On the GPU of x: the output, then one launch of launch_gelu (gelu_kernel.h) over
  // row-major copies of the inputs (flat indexing), on the caller's current stream.
  kg::elementwise::CudaForward<1> forward({&x});
  THO_DISPATCH_V2(x.scalar_type(), "gelu_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_gelu<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward (see gelu_backward_cpu): the gradients of the inputs flagged in `_needs`, in order,
// all from one kernel launch.
std::vector<Tensor> gelu_backward_cuda(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  kg::elementwise::CudaBackward<1> backward(_grad, _needs, {&x});
  THO_DISPATCH_V2(x.scalar_type(), "gelu_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(launch_gelu_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace gelu

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("gelu", TORCH_BOX(&gelu::gelu_cuda));
  m.impl("gelu_backward", TORCH_BOX(&gelu::gelu_backward_cuda));
}
