#pragma once
// stable_utils.h: what every op's tensor code shares on the LibTorch stable ABI: the Tensor type,
// the KG_CHECK macro, and the pieces of the input checks' messages (dtype, shape and device names).
//
// The package's C++ includes only headers of the stable ABI: torch/csrc/stable/* (inline C++ over
// the C functions libtorch promises to keep, aoti_torch_* and torch_*) and torch/headeronly/*
// (compiled into this library, no libtorch at all). That is what lets one binary load on later
// torch releases: it calls nothing else in libtorch. _build.py defines TORCH_TARGET_VERSION, which
// hides every stable API newer than that torch, and turns every ATen and c10 header into a compile
// error ("This file should not be included when either TORCH_STABLE_ONLY or TORCH_TARGET_VERSION
// is defined."): an accidental #include <ATen/...> cannot creep in.

#if !defined(TORCH_TARGET_VERSION)
#error "rmsnorm must be compiled with -DTORCH_TARGET_VERSION=0x... (set by _build.py): it selects the stable ABI version the binary needs at run time"
#endif

#include <torch/csrc/stable/device.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

// KG_CHECK(cond, parts...): unless cond holds, throws std::runtime_error (RuntimeError in Python)
// whose message is the parts streamed together, exactly as TORCH_CHECK's was. Why not torch's own
// STD_TORCH_CHECK (torch/headeronly/util/Exception.h)? It prefixes every message with
// "<function>, <absolute source path>:<line>, ", which leaks the build machine's paths into users'
// error messages (c10's TORCH_CHECK kept that out of str(error)), and it expands to a bare `if`
// that captures a following `else`. Parts must be streamable with std::ostream: strings and
// numbers, not shapes or devices (see shape_of and device_of below).
#define KG_CHECK(cond, ...)                                               \
  do {                                                                    \
    if (!(cond)) {                                                        \
      throw std::runtime_error(::kernelgen::detail::concat(__VA_ARGS__)); \
    }                                                                     \
  } while (false)

namespace kernelgen {

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}
}  // namespace detail

// A reference-counted handle to a libtorch tensor (copies are cheap, like at::Tensor's). Its
// methods call the stable C functions; torch::stable:: free functions (empty, contiguous, zero_,
// parallel_for, ...) are the stable ABI's ATen ops.
using Tensor = torch::stable::Tensor;

// "Float", "Half", "Int", ...: the names c10 prints for a dtype, so the messages read as before.
inline const char* dtype_name(torch::headeronly::ScalarType dtype) { return torch::headeronly::toString(dtype); }

// "[2, 3]". Shapes have no operator<< on the stable side (c10's, for IntArrayRef, is not part of
// the stable ABI), and integers are formatted with std::to_string.
inline std::string shape_of(const Tensor& t) {
  std::string text = "[";
  const int64_t dims = t.dim();
  for (int64_t dim = 0; dim < dims; ++dim) {
    text += (dim ? ", " : "") + std::to_string(t.size(dim));
  }
  return text + "]";
}

// "cpu", "cuda:0", as c10::Device prints them. The stable Device has no operator<< nor a name for
// its type, so the common types are spelled out here.
inline std::string device_of(const torch::stable::Device& device) {
  using torch::headeronly::DeviceType;
  std::string text;
  switch (device.type()) {
    case DeviceType::CPU: text = "cpu"; break;
    case DeviceType::CUDA: text = "cuda"; break;
    case DeviceType::HIP: text = "hip"; break;
    case DeviceType::XPU: text = "xpu"; break;
    case DeviceType::MPS: text = "mps"; break;
    case DeviceType::Meta: text = "meta"; break;
    case DeviceType::PrivateUse1: text = "privateuseone"; break;
    default: text = "device type " + std::to_string(static_cast<int>(device.type())); break;
  }
  if (device.has_index()) {
    text += ":" + std::to_string(device.index());
  }
  return text;
}

}  // namespace kernelgen
