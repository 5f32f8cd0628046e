// softmax.cpp: the schema of myteam::softmax, its input checks, and its CPU
// implementation.
//
// The op is registered with the dispatcher rather than bound with pybind11, so it is a real PyTorch
// operator: it dispatches on the inputs' device, torch.compile can put it in a graph (given the
// fake implementation in ops/softmax.py), and torch.library.opcheck can test it.
// STABLE_TORCH_LIBRARY_FRAGMENT, not STABLE_TORCH_LIBRARY: every op of the package, and any other
// library in the process, may add ops to the namespace myteam.
//
// LibTorch stable ABI: only torch/csrc/stable and torch/headeronly headers (see ../stable_utils.h),
// so the compiled op calls libtorch through its stable C shim alone, and the same binary keeps
// working on later torch releases.

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/headeronly/core/Dispatch_v2.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "../stable_utils.h"  // kernelgen::Tensor (torch::stable::Tensor), KG_CHECK, message helpers
#include "softmax.h"
#include "softmax_checks.h"

namespace softmax {

using kernelgen::Tensor;
using torch::headeronly::ScalarType;

void check_inputs(const Tensor& x) {
  // KG_CHECK (../stable_utils.h) throws std::runtime_error, which reaches Python as a RuntimeError
  // with exactly this message.
  const ScalarType dtype = x.scalar_type();
  KG_CHECK(
      dtype == ScalarType::Float ||
          dtype == ScalarType::Double ||
          dtype == ScalarType::Half ||
          dtype == ScalarType::BFloat16,
      "softmax: x has dtype ", kernelgen::dtype_name(dtype), ", but softmax supports float32, float64, float16, bfloat16");
  KG_CHECK(x.dim() >= 1, "softmax: x is a 0-dimensional tensor; it needs at least one dimension (the row)");
}

namespace {

// Rows per task of torch::stable::parallel_for, chosen so that a task holds about this many elements:
// a small tensor stays on one thread (spawning work costs microseconds), a large one spreads over all cores.
constexpr int64_t kGrainElements = 32768;
// Partial results per row reduction (a power of two).
constexpr int kLanes = 64;

Tensor softmax_cpu(const Tensor& x) {
  // Every check happens here, before the parallel loop: nothing inside the loop may throw (the loop
  // body runs behind libtorch's C interface, which would replace the message by a generic failure).
  check_inputs(x);
  // Row-major (contiguous) data; the *_contig locals keep any copies alive while their pointers are in use.
  const Tensor x_contig = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty(x.sizes(), x.scalar_type(), std::nullopt, x.device());
  const int64_t cols = x.size(x.dim() - 1);
  if (out.numel() == 0) {
    return out;  // no rows, or rows of length 0: nothing to compute
  }
  const int64_t rows = out.numel() / cols;
  THO_DISPATCH_V2(x.scalar_type(), "softmax_cpu", AT_WRAP([&] {
    using acc_t = opmath::opmath_type<scalar_t>;  // float for float16/bfloat16, else scalar_t
    const scalar_t* x_ptr = x_contig.const_data_ptr<scalar_t>();
    scalar_t* out_ptr = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, kGrainElements / cols);
    torch::stable::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t base = row * cols;
        acc_t _r[kReductions];
        {  // _r[0] = max(x)
          // kLanes partial results, each folding every kLanes-th element, then folded pairwise: a
          // float sum of 65536 elements left to right loses about 8x more than this, and the
          // independent lanes vectorize.
          acc_t part[kLanes];
          for (int lane = 0; lane < kLanes; ++lane) {
            part[lane] = Reduce0<acc_t>::identity();
          }
          for (int64_t col = 0; col < cols; ++col) {
            acc_t& slot = part[col % kLanes];
            slot = Reduce0<acc_t>::combine(slot, softmax_reduce0_arg<acc_t>(
                static_cast<acc_t>(x_ptr[base + col]), _r));
          }
          for (int width = kLanes / 2; width > 0; width /= 2) {
            for (int lane = 0; lane < width; ++lane) {
              part[lane] = Reduce0<acc_t>::combine(part[lane], part[lane + width]);
            }
          }
          _r[0] = kMean0 ? part[0] / static_cast<acc_t>(cols) : part[0];
        }
        {  // _r[1] = sum(exp(x - max(x)))
          // kLanes partial results, each folding every kLanes-th element, then folded pairwise: a
          // float sum of 65536 elements left to right loses about 8x more than this, and the
          // independent lanes vectorize.
          acc_t part[kLanes];
          for (int lane = 0; lane < kLanes; ++lane) {
            part[lane] = Reduce1<acc_t>::identity();
          }
          for (int64_t col = 0; col < cols; ++col) {
            acc_t& slot = part[col % kLanes];
            slot = Reduce1<acc_t>::combine(slot, softmax_reduce1_arg<acc_t>(
                static_cast<acc_t>(x_ptr[base + col]), _r));
          }
          for (int width = kLanes / 2; width > 0; width /= 2) {
            for (int lane = 0; lane < width; ++lane) {
              part[lane] = Reduce1<acc_t>::combine(part[lane], part[lane + width]);
            }
          }
          _r[1] = kMean1 ? part[0] / static_cast<acc_t>(cols) : part[0];
        }
        for (int64_t col = 0; col < cols; ++col) {
          const acc_t _a1 = softmax_reduce1_arg<acc_t>(static_cast<acc_t>(x_ptr[base + col]), _r);
          out_ptr[base + col] = static_cast<scalar_t>(softmax_out<acc_t>(
              static_cast<acc_t>(x_ptr[base + col]), _a1, _r));
        }
      }
    });
  }), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);
  return out;
}

}  // namespace
}  // namespace softmax

// The schema: the op's name and signature, declared once for all backends. "Tensor" arguments
// without (a!) annotations promise that the op does not mutate or alias its inputs.
STABLE_TORCH_LIBRARY_FRAGMENT(myteam, m) {
  m.def("softmax(Tensor x) -> Tensor");
}

// The CPU implementation (the CUDA one is registered in cuda/softmax_cuda.cpp), boxed by TORCH_BOX.
STABLE_TORCH_LIBRARY_IMPL(myteam, CPU, m) {
  m.impl("softmax", TORCH_BOX(&softmax::softmax_cpu));
}
