// layernorm_cuda.cpp: the CUDA implementation of myteam::layernorm, tensor side: the checks,
// then the package's CUDA rowwise op (../../kernelgen/rowwise_cuda_op.h: device guard, contiguous copies,
// allocation, stream) around this op's launch functions, under the dispatch of its dtypes. The kernels are
// in layernorm_kernel.cu. Stable ABI only (see ../../stable_utils.h and ../../stable_cuda.h).

#include <torch/csrc/stable/library.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <vector>

#include "../../kernelgen/rowwise_cuda_op.h"
#include "../../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK
#include "../layernorm_checks.h"
#include "layernorm_kernel.h"

namespace layernorm {
namespace {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

Tensor layernorm_cuda(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_inputs(x, w, b);
  // On the GPU of x: the output, then one launch of launch_layernorm (layernorm_kernel.h) over
  // row-major copies of the arguments, on the caller's current stream.
  kg::rowwise::CudaForward<3> forward({&x, &w, &b});
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_cuda", AT_WRAP([&] {
    forward.run<scalar_t>(launch_layernorm<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return forward.out();
}


// The backward (see layernorm_backward_cpu): the gradients of the arguments flagged in `_needs`, in order.
// One kernel launch computes every gradient asked for; a second, small one adds up each weight's partial
// sums in a fixed order (no atomics: bitwise reproducible).
std::vector<Tensor> layernorm_backward_cuda(const Tensor& _grad, const Tensor& x, const Tensor& w, const Tensor& b, std::vector<bool> _needs) {
  check_backward_inputs(_grad, x, w, b, _needs);
  kg::rowwise::CudaBackward<1, 2> backward(_grad, _needs, {&x, &w, &b});
  THO_DISPATCH_V2(x.scalar_type(), "layernorm_backward_cuda", AT_WRAP([&] {
    backward.run<scalar_t>(layernorm_backward_slots<scalar_t>, launch_layernorm_backward<scalar_t>);
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return backward.grads();
}

}  // namespace
}  // namespace layernorm

STABLE_TORCH_LIBRARY_IMPL(myteam, CUDA, m) {
  m.impl("layernorm", TORCH_BOX(&layernorm::layernorm_cuda));
  m.impl("layernorm_backward", TORCH_BOX(&layernorm::layernorm_backward_cuda));
}
