// Python binding of the issue-11 prototype (an experiment: ATen, not the stable ABI).
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>

#include "mm_sm90.h"

torch::Tensor mm(torch::Tensor a, torch::Tensor b, std::optional<torch::Tensor> bias, int64_t config) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
              "mm: expected 2-D CUDA tensors with a.size(1) == b.size(0), got ", a.sizes(), " and ", b.sizes());
  TORCH_CHECK(a.scalar_type() == b.scalar_type() &&
                  (a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16),
              "mm: float16 or bfloat16 operands of one dtype");
  a = a.contiguous();
  b = b.contiguous();
  const bool half = a.scalar_type() == at::kHalf;
  const void* bias_ptr = nullptr;
  if (bias) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == b.size(1) && bias->scalar_type() == a.scalar_type(),
                "mm: bias must have N elements of the operands' dtype");
    *bias = bias->contiguous();
    bias_ptr = bias->data_ptr();
  }
  auto d = at::empty({a.size(0), b.size(1)}, a.options());
  auto workspace = at::empty({1 << 20}, a.options().dtype(at::kByte));
  auto fn = bias ? (half ? mm_sm90_f16_bias_gelu : mm_sm90_bf16_bias_gelu) : (half ? mm_sm90_f16 : mm_sm90_bf16);
  const int rc = fn(static_cast<int>(config), a.data_ptr(), b.data_ptr(), bias_ptr, d.data_ptr(),
                    static_cast<int>(a.size(0)), static_cast<int>(b.size(1)), static_cast<int>(a.size(1)),
                    workspace.data_ptr(), workspace.numel(), c10::cuda::getCurrentCUDAStream());
  TORCH_CHECK(rc == 0, "mm_sm90 config ", config, " failed with code ", rc);
  return d;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("mm", &mm); }
