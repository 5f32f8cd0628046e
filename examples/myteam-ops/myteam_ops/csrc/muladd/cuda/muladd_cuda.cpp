// muladd_cuda.cpp: the CUDA implementation of myteam::muladd, tensor side: the checks,
// then the package's CUDA elementwise op (../../kernelgen/elementwise_cuda_op.h: device guard, contiguous
// copies, allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The
// kernels are in muladd_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/elementwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../muladd_checks.h"
#include "muladd_kernel.h"

namespace muladd {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor muladd_cuda(const Tensor& a, const Tensor& b, const Tensor& c) {
  check_inputs(a, b, c);
  // On the GPU of a: the output, then one launch of launch_muladd (muladd_kernel.h) over
  // row-major copies of the inputs (flat indexing), on the caller's current stream.
  kg::elementwise::CudaForward<3> forward({&a, &b, &c});
  THO_DISPATCH_V2(a.scalar_type(), "muladd_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_muladd<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}

// The backward (see muladd_backward_cpu): the gradients of the inputs flagged in `_needs`, in order,
// all from one kernel launch.
std::vector<Tensor> muladd_backward_cuda(const Tensor& _grad, const Tensor& a, const Tensor& b, const Tensor& c, std::vector<bool> _needs) {
  check_backward_inputs(_grad, a, b, c, _needs);
  kg::elementwise::CudaBackward<3> backward(_grad, _needs, {&a, &b, &c});
  THO_DISPATCH_V2(a.scalar_type(), "muladd_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(launch_muladd_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace muladd

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("muladd", TORCH_BOX(&muladd::muladd_cuda));
  m.impl("muladd_backward", TORCH_BOX(&muladd::muladd_backward_cuda));
}
