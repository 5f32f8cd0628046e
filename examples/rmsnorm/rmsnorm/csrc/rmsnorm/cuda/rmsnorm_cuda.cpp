// rmsnorm_cuda.cpp: the CUDA implementation of rmsnorm::rmsnorm, tensor side: the checks,
// then the package's CUDA rowwise op (../../kernelgen/rowwise_cuda_op.h: device guard, contiguous copies,
// allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The kernels are
// in rmsnorm_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/rowwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../rmsnorm_checks.h"
#include "rmsnorm_kernel.h"

namespace rmsnorm {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor rmsnorm_cuda(const Tensor& x, const Tensor& w) {
  check_inputs(x, w);
  // On the GPU of x: the output, then one launch of launch_rmsnorm (rmsnorm_kernel.h) over
  // row-major copies of the arguments, on the caller's current stream.
  kg::rowwise::CudaForward<2> forward({&x, &w});
  THO_DISPATCH_V2(x.scalar_type(), "rmsnorm_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_rmsnorm<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}


// The backward (see rmsnorm_backward_cpu): the gradients of the arguments flagged in `_needs`, in order.
// One kernel launch computes every gradient asked for; a second, small one adds up each weight's partial
// sums in a fixed order (no atomics: bitwise reproducible).
std::vector<Tensor> rmsnorm_backward_cuda(const Tensor& _grad, const Tensor& x, const Tensor& w, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, w, _needs);
  kg::rowwise::CudaBackward<1, 1> backward(_grad, _needs, {&x, &w});
  THO_DISPATCH_V2(x.scalar_type(), "rmsnorm_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(rmsnorm_backward_slots<scalar_t>, launch_rmsnorm_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace rmsnorm

STABLE_TORCH_LIBRARY_IMPL(rmsnorm, CUDA, m) {
  m.impl("rmsnorm", TORCH_BOX(&rmsnorm::rmsnorm_cuda));
  m.impl("rmsnorm_backward", TORCH_BOX(&rmsnorm::rmsnorm_backward_cuda));
}
