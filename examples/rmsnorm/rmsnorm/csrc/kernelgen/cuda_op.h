#pragma once
// kernelgen/cuda_op.h: the arguments of one call of a CUDA op of this package, ready for its launch
// function (csrc/<op>/cuda/<op>_kernel.h, compiled by nvcc, which takes raw pointers and sizes):
// their GPU made current, row-major copies of them, and the caller's stream. The kinds' own headers
// (elementwise_cuda_op.h, rowwise_cuda_op.h) build their forward and backward calls on it.

#include <cuda_runtime_api.h>
#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "../stable_cuda.h"
#include "../stable_utils.h"
#include "tensors.h"

namespace kg {
namespace {

using kernelgen::Tensor;

// N tensors on one GPU (the op's checks have made sure of that). For the object's lifetime their GPU
// is the current device (without the guard, a call with tensors on cuda:1 would allocate and launch
// on cuda:0), and operator[] / data<scalar_t>(i) are row-major (contiguous) copies of them where they
// are not already: the copies live as long as the object, that is until the launch that reads them
// is queued (the caching allocator orders their reuse after it on the stream).
template <std::size_t N>
class CudaArgs {
 public:
  explicit CudaArgs(const std::array<const Tensor*, N>& tensors)
      : device_index_(tensors[0]->get_device_index()), guard_(device_index_), contig_(contiguous_all(tensors)) {}

  const Tensor& operator[](std::size_t i) const { return contig_[i]; }

  template <typename scalar_t>
  const scalar_t* data(std::size_t i) const {
    return contig_[i].template const_data_ptr<scalar_t>();
  }

  // The caller's current stream on their GPU, never the default stream: work on stream 0 is not
  // ordered with the caller's stream, which gives silently wrong results under CUDA graphs,
  // torch.compile's reduce-overhead mode and any code that uses side streams. (Why a C-shim call and
  // not getCurrentStream().id(): see current_cuda_stream in ../stable_cuda.h.)
  cudaStream_t stream() const { return kernelgen::current_cuda_stream(device_index_); }

 private:
  int32_t device_index_;
  kernelgen::DeviceGuard guard_;
  std::vector<Tensor> contig_;
};

}  // namespace
}  // namespace kg
