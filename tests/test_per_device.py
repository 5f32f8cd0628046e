"""PerDevice (csrc/kernelgen/per_device.cuh): the one cache of the CUDA launches' runtime answers (the elementwise
packs, the rowwise builds' spills, whether a cluster fits, occupancy, device attributes). It runs on the host only,
so it is tested here, without a GPU: a small program includes the generated header with cudaGetDevice and the
error-check macro replaced by stand-ins (the current device is a variable the program sets), and checks that an
answer is asked once per device and key, that every value is kept (false and -1 among them: the elementwise
launch's kWide is -1), and that `set` replaces a kept answer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

_CUDA_INCLUDE = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"

# The stand-ins: the check macro of either ABI throws on an error, and cudaGetDevice reports `current`.
_CHECK = "#pragma once\n#define {name}(EXPR) do {{ if ((EXPR) != cudaSuccess) throw 1; }} while (0)\n"

_PROGRAM = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime_api.h>

static int current = 0;
cudaError_t CUDARTAPI cudaGetDevice(int* device) {
  *device = current;
  return cudaSuccess;
}

#include "kernelgen/per_device.cuh"

#define EXPECT(cond)                                       \
  do {                                                     \
    if (!(cond)) {                                         \
      std::printf("failed at line %d: %s\n", __LINE__, #cond); \
      return 1;                                            \
    }                                                      \
  } while (0)

int main() {
  int asked = 0;
  // An answer is asked once; -1 (the elementwise launch's kWide) is kept like any other.
  static kg::PerDevice<int> packs;
  const auto wide = [&] { ++asked; return -1; };
  EXPECT(packs.get(wide) == -1);
  EXPECT(packs.get(wide) == -1);
  EXPECT(asked == 1);

  // false is kept; each key has its own answer.
  static kg::PerDevice<bool, 3> spills;
  asked = 0;
  EXPECT(!spills.get(2, [&] { ++asked; return false; }));
  EXPECT(!spills.get(2, [&] { ++asked; return true; }));
  EXPECT(spills.get(1, [&] { ++asked; return true; }));
  EXPECT(asked == 2);

  // Each device has its own answers.
  current = 1;
  EXPECT(spills.get(2, [&] { ++asked; return true; }));
  EXPECT(asked == 3);
  current = 0;
  EXPECT(!spills.get(2, [&] { ++asked; return true; }));
  EXPECT(asked == 3);

  // set replaces the kept answer, for the current device only.
  spills.set(2, true);
  EXPECT(spills.get(2, [&] { ++asked; return false; }));
  current = 1;
  spills.set(2, false);
  EXPECT(!spills.get(2, [&] { ++asked; return true; }));
  current = 0;
  EXPECT(spills.get(2, [&] { ++asked; return false; }));
  EXPECT(asked == 3);

  // Large and zero answers (a device attribute, a count of clusters that fit).
  static kg::PerDevice<int64_t, 2> sizes;
  EXPECT(sizes.get(0, [&] { ++asked; return int64_t{1} << 40; }) == (int64_t{1} << 40));
  EXPECT(sizes.get(0, [&] { ++asked; return int64_t{7}; }) == (int64_t{1} << 40));
  EXPECT(sizes.get(1, [&] { ++asked; return int64_t{0}; }) == 0);
  EXPECT(sizes.get(1, [&] { ++asked; return int64_t{7}; }) == 0);
  EXPECT(asked == 5);

  // Past the devices it keeps, every call asks.
  current = kg::kCachedDevices;
  EXPECT(packs.get(wide) == -1);
  EXPECT(packs.get(wide) == -1);
  EXPECT(asked == 7);
  std::printf("ok\n");
  return 0;
}
"""


def _compiler() -> str:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return name
    pytest.skip("no C++ compiler on this machine")


@pytest.mark.parametrize("abi, check, header", [
    ("stable", "STD_CUDA_CHECK", "torch/csrc/stable/macros.h"),
    ("full", "C10_CUDA_CHECK", "c10/cuda/CUDAException.h"),
])
def test_per_device_asks_once_per_device_and_key_and_keeps_every_answer(tmp_path: Path, abi, check, header):
    if not (_CUDA_INCLUDE / "cuda_runtime_api.h").is_file():
        pytest.skip(f"no CUDA headers at {_CUDA_INCLUDE} (set CUDA_HOME)")
    compiler = _compiler()
    result = CliRunner().invoke(main, ["new", "ew", "--inputs", "x", "--expr", "x * 2", "--abi", abi, "--defaults",
                                       "-o", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    csrc = tmp_path / "ew" / "ew" / "csrc"
    assert (csrc / "kernelgen" / "per_device.cuh").is_file()
    stand_ins = tmp_path / "stand_ins"
    (stand_ins / header).parent.mkdir(parents=True)
    (stand_ins / header).write_text(_CHECK.format(name=check))
    (tmp_path / "program.cpp").write_text(_PROGRAM)
    binary = tmp_path / "program"
    build = subprocess.run([compiler, "-std=c++17", "-Wall", "-Werror", f"-I{stand_ins}", f"-I{_CUDA_INCLUDE}",
                            f"-I{csrc}", str(tmp_path / "program.cpp"), "-o", str(binary)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
