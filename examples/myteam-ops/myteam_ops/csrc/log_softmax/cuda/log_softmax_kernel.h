#pragma once
// log_softmax_kernel.h: the interface between the tensor code (log_softmax_cuda.cpp, compiled by
// the host compiler with the stable tensor API) and the kernel (log_softmax_kernel.cu, compiled by nvcc
// without it). Only raw pointers and sizes cross it.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

namespace log_softmax {

// For each of `rows` rows of `cols` elements (contiguous, row-major, cols >= 1): out[row, :] = the expression of log_softmax.h over that row.
// rows >= 1. Launched on `stream`. Instantiated in log_softmax_kernel.cu for float, double, torch::headeronly::Half, torch::headeronly::BFloat16.
template <typename scalar_t>
void launch_log_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                       cudaStream_t stream);


// The backward, for `rows` rows of `cols` elements (contiguous) and the output's gradient `grad` (of the
// inputs' shape): grads[j] receives the gradient of argument j (the inputs: rows x cols, then the
// weights: cols), or nothing where it is null. `partial` holds log_softmax_backward_slots(rows, cols) x cols
// elements of the math type for each weight whose gradient is asked for (in the order of the weights),
// or is null when none is: the weights' partial sums (../../kernelgen/rowwise.cuh), in the math type.
// Launched on `stream`.
template <typename scalar_t>
using partial_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
template <typename scalar_t>
int64_t log_softmax_backward_slots(int64_t rows, int64_t cols);
template <typename scalar_t>
void launch_log_softmax_backward(const scalar_t* grad, const scalar_t* x, scalar_t* const* grads,
                                partial_t<scalar_t>* partial, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace log_softmax
