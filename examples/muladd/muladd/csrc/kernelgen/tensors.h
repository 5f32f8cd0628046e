#pragma once
// kernelgen/tensors.h: the lists of tensors that the package's CPU and CUDA op headers
// (elementwise_*_op.h, rowwise_*_op.h, cuda_op.h) hand to their loops and launches.

#include <torch/csrc/stable/ops.h>

#include <array>
#include <cstddef>
#include <optional>
#include <vector>

#include "../stable_utils.h"

namespace kg {
namespace {

using kernelgen::Tensor;

// Row-major (contiguous) copies of `tensors`, where they are not already: contiguous() returns the
// tensor itself when it is, and a copy otherwise (a transposed or sliced view). The loops and kernels
// walk flat memory; the vector keeps the copies alive while their data pointers are in use.
template <std::size_t N>
std::vector<Tensor> contiguous_all(const std::array<const Tensor*, N>& tensors) {
  std::vector<Tensor> contig;
  contig.reserve(N);
  for (const Tensor* t : tensors) {
    contig.push_back(torch::stable::contiguous(*t));
  }
  return contig;
}

// A new (uninitialised) row-major tensor shaped like `like`, of its dtype and on its device. empty
// rather than empty_like: empty_like keeps the input's strides, so a transposed input would give a
// transposed output, and the loops and kernels write row-major. (std::nullopt: the default layout.)
inline Tensor empty_row_major(const Tensor& like) {
  return torch::stable::empty(like.sizes(), like.scalar_type(), std::nullopt, like.device());
}

// A backward's tensors: the output's gradient `grad`, then the op's arguments.
template <std::size_t N>
std::array<const Tensor*, N + 1> with_grad(const Tensor& grad, const std::array<const Tensor*, N>& args) {
  std::array<const Tensor*, N + 1> tensors = {&grad};
  for (std::size_t j = 0; j < N; ++j) {
    tensors[j + 1] = args[j];
  }
  return tensors;
}

}  // namespace
}  // namespace kg
