#pragma once
// kernelgen/per_device.cuh: the one cache the launches of this package keep, PerDevice. A launch asks the
// CUDA runtime about a compiled kernel or the GPU (its spills, its occupancy, the SM count), and the answer
// does not change while the process runs; each question costs a microsecond of host time or more, which an
// op over a few megabytes cannot spare at every call. So each answer is asked once per device (and key: a
// thread count, a cluster size) and kept.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK: C10_CUDA_CHECK's stable twin; it needs -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>

#include <atomic>
#include <cstdint>

namespace kg {
namespace {

// The devices whose answers a launch keeps; a process on more devices asks again at every call on the others.
constexpr int kCachedDevices = 64;

// One answer of type T (bool or an integer of up to 63 bits, negative ones included) per device and key
// (0 .. kKeys - 1), asked once: `get` returns the kept answer, or calls `ask` and keeps what it returns. A
// slot holds the answer shifted left by one with the low bit set, so 0 means not asked yet, and a static
// PerDevice starts at 0. Two threads that call `get` at once may both ask, and both keep the same answer:
// relaxed atomics are enough, as the slot publishes nothing else.
template <class T, int kKeys = 1>
class PerDevice {
 public:
  template <class Ask>
  T get(int key, Ask ask) {
    const int device = current_device();
    if (device >= kCachedDevices) {
      return ask();
    }
    const uint64_t kept = slots_[device][key].load(std::memory_order_relaxed);
    if (kept != 0) {
      return static_cast<T>(static_cast<int64_t>(kept) >> 1);
    }
    const T answer = ask();
    set(key, answer);
    return answer;
  }

  template <class Ask>
  T get(Ask ask) {
    return get(0, ask);
  }

  // Keeps `answer` for the current device, replacing any kept one: also where a later call learns better
  // than the first answer (a launch the occupancy API allowed fails after all).
  void set(int key, T answer) {
    const int device = current_device();
    if (device < kCachedDevices) {
      const uint64_t kept = (static_cast<uint64_t>(static_cast<int64_t>(answer)) << 1) | 1;
      slots_[device][key].store(kept, std::memory_order_relaxed);
    }
  }

 private:
  static int current_device() {
    int device = 0;
    STD_CUDA_CHECK(cudaGetDevice(&device));
    return device;
  }

  std::atomic<uint64_t> slots_[kCachedDevices][kKeys];
};

}  // namespace
}  // namespace kg
