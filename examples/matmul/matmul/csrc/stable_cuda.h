#pragma once
// stable_cuda.h: the CUDA side of the tensor code on the stable ABI: the device guard and the
// caller's current stream. Included by csrc/<op>/cuda/<op>_cuda.cpp only (never by a .cu file).
//
// The CUDA entries of the stable C shim (aoti_torch_get_current_cuda_stream, and
// torch_c10_cuda_check_msg behind STD_CUDA_CHECK) are declared only when USE_CUDA is defined;
// _build.py passes -DUSE_CUDA to the CUDA build.

#if !defined(USE_CUDA)
#error "stable_cuda.h needs -DUSE_CUDA (set by _build.py for the CUDA build): the CUDA entries of the stable C shim are declared only then"
#endif

#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>
#include <torch/csrc/stable/c/shim.h>
#include <torch/csrc/stable/stableivalue_conversions.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/csrc/stable/version.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kernelgen {

// The stable replacement of c10::cuda::CUDAGuard: makes a device current for its lifetime, and
// restores the previous one. It is the generic accelerator guard, here on CUDA.
using DeviceGuard = torch::stable::accelerator::DeviceGuard;

// The caller's current CUDA stream on `device_index`, as the raw cudaStream_t a kernel launches on
// (what c10::cuda::getCurrentCUDAStream() gave). NOT torch::stable::accelerator::getCurrentStream(i)
// .id(): that is c10's StreamId, a packed integer that only names a stream inside c10; cast to a
// cudaStream_t it compiles and launches on a garbage stream. getCurrentStream(i).nativeHandle()
// returns the real handle, but only from torch 2.13, above this package's TORCH_TARGET_VERSION;
// this C function of the stable shim exists in every stable version.
// The shim reports failure by its return code. It is checked by hand: the macro for that is
// STABLE_TORCH_ERROR_CODE_CHECK in torch 2.12 and later and TORCH_ERROR_CODE_CHECK before, and
// this package must compile against the headers of every torch from its target version up.
inline cudaStream_t current_cuda_stream(int32_t device_index) {
  void* stream = nullptr;
  if (aoti_torch_get_current_cuda_stream(device_index, &stream) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error("kernelgen: cannot get the current CUDA stream of device " +
                             std::to_string(device_index));
  }
  return static_cast<cudaStream_t>(stream);
}

// A @ B by ATen's matmul (cuBLAS on the GPU; it follows torch.backends.cuda.matmul's precision settings),
// called through the dispatcher by the op's name: the stable ABI's way to call any registered op, which
// torch::stable's own wrapper of matmul also takes. Calling it by name keeps that wrapper's identifier out
// of the generated code, where kernelgen would have to move an op named matmul to namespace matmul_op.
// The float32 and float64 matmul ops take their product from it (csrc/<op>/cuda/<op>_cuda.cpp). The
// macro that turns the shim's error code into the op's exception is checked by name, as above.
inline torch::stable::Tensor library_product(const torch::stable::Tensor& a, const torch::stable::Tensor& b) {
  std::array<StableIValue, 2> stack{torch::stable::detail::from(a), torch::stable::detail::from(b)};
#if defined(STABLE_TORCH_ERROR_CODE_CHECK)
  STABLE_TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::matmul", "", stack.data(), TORCH_ABI_VERSION));
#else
  TORCH_ERROR_CODE_CHECK(torch_call_dispatcher("aten::matmul", "", stack.data(), TORCH_ABI_VERSION));
#endif
  return torch::stable::detail::to<torch::stable::Tensor>(stack[0]);
}

}  // namespace kernelgen
