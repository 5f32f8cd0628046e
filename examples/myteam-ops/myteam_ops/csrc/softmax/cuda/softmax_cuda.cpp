// softmax_cuda.cpp: the CUDA implementation of myteam::softmax, tensor side: the checks,
// then the package's CUDA rowwise op (../../kernelgen/rowwise_cuda_op.h: device guard, contiguous copies,
// allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The kernels are
// in softmax_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/rowwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../softmax_checks.h"
#include "softmax_kernel.h"

namespace softmax {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor softmax_cuda(const Tensor& x) {
  check_inputs(x);
  // On the GPU of x: the output, then one launch of launch_softmax (softmax_kernel.h) over
  // row-major copies of the arguments, on the caller's current stream.
  kg::rowwise::CudaForward<1> forward({&x});
  THO_DISPATCH_V2(x.scalar_type(), "softmax_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_softmax<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}


// The backward (see softmax_backward_cpu): the gradients of the arguments flagged in `_needs`, in order.
// One kernel launch computes every gradient asked for; a second, small one adds up each weight's partial
// sums in a fixed order (no atomics: bitwise reproducible).
std::vector<Tensor> softmax_backward_cuda(const Tensor& _grad, const Tensor& x, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, _needs);
  kg::rowwise::CudaBackward<1, 0> backward(_grad, _needs, {&x});
  THO_DISPATCH_V2(x.scalar_type(), "softmax_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(softmax_backward_slots<scalar_t>, launch_softmax_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace softmax

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("softmax", TORCH_BOX(&softmax::softmax_cuda));
  m.impl("softmax_backward", TORCH_BOX(&softmax::softmax_backward_cuda));
}
