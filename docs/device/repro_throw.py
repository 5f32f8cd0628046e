# Does throwing a c10::Error whose message formats an IntArrayRef crash with this toolchain?
import subprocess, torch
from torch.utils.cpp_extension import load_inline
print(subprocess.run(["bash", "-c", "g++ --version | head -1; which g++; ldconfig -p | grep libstdc++ | head -3"], capture_output=True, text=True).stdout)
src = r'''
#include <ATen/core/Tensor.h>
#include <torch/library.h>
void throw_sizes(const at::Tensor& a) { TORCH_CHECK(false, "shape ", a.sizes()); }
void throw_dtype(const at::Tensor& a) { TORCH_CHECK(false, "dtype ", a.scalar_type()); }
void throw_device(const at::Tensor& a) { TORCH_CHECK(false, "device ", a.device()); }
void throw_loop(const at::Tensor& a, const at::Tensor& b) {
  const std::pair<const char*, const at::Tensor*> others[] = {{"b", &b}};
  for (const auto& [name, t] : others) { TORCH_CHECK(t->sizes() == a.sizes(), "x: ", name, " has shape ", t->sizes()); }
}
TORCH_LIBRARY(repro, m) {
  m.def("sizes(Tensor a) -> ()"); m.def("dtype(Tensor a) -> ()"); m.def("device(Tensor a) -> ()"); m.def("loop(Tensor a, Tensor b) -> ()");
  m.impl("sizes", &throw_sizes); m.impl("dtype", &throw_dtype); m.impl("device", &throw_device); m.impl("loop", &throw_loop);
}
'''
import sys
load_inline("repro", cpp_sources=[src], is_python_module=False, verbose=False)
x = torch.ones(3); y = torch.ones(4)
for name, args in [("dtype", (x,)), ("device", (x,)), ("sizes", (x,)), ("loop", (x, y))]:
    print("calling", name, flush=True)
    try:
        getattr(torch.ops.repro, name)(*args)
    except RuntimeError as e:
        print("  ok:", str(e).splitlines()[0], flush=True)
