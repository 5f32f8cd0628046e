// _module.cpp: the Python module matmul._C. It is empty: loading the shared library is what runs
// each op's registrations (TORCH_LIBRARY_FRAGMENT and TORCH_LIBRARY_IMPL in csrc/<op>/), and
// `from matmul import _C` only needs a module init function to load it.

#include <Python.h>

PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}
