// _module.cpp: the Python module rmsnorm._C. It is empty: loading the shared library is what runs
// each op's registrations (STABLE_TORCH_LIBRARY_FRAGMENT and STABLE_TORCH_LIBRARY_IMPL in
// csrc/<op>/), and `from rmsnorm import _C` only needs a module init function to load it.
//
// Python's limited API only (PyModuleDef, PyModule_Create): the extension is built with
// py_limited_api=True and -DPy_LIMITED_API=0x030A0000, so one binary (tagged abi3) loads on
// CPython 3.10 and every later version. Nothing here may use a call outside the limited API.

#if !defined(Py_LIMITED_API) || Py_LIMITED_API < 0x030A0000
#error "_module.cpp must be compiled with -DPy_LIMITED_API=0x030A0000 (set by _build.py and by torch's BuildExtension for py_limited_api=True)"
#endif

#include <Python.h>

PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}
