# Sourced by the stop scripts (stop51.sh, stop52.sh) after they set W (their scratch folder): the device
# machine's setup they share, and build DIR (the generated package under DIR, built in place on every core,
# ptxas's report in $W/build_<name>.log; nothing to do where it is built already).
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/out}; mkdir -p "$FINAL_OUT"; export PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
mkdir -p "$W"
nvidia-smi --query-gpu=name --format=csv,noheader

build() {
  local pkg=$1 t; t=$(date +%s)
  ls "$pkg"/rsweep_ops/_C*.so > /dev/null 2>&1 && return
  (cd "$pkg" && MAX_JOBS=16 KERNELGEN_REQUIRE_CUDA=1 NVCC_APPEND_FLAGS="-Xptxas -v" python3 setup.py build_ext --inplace \
     > "$W/build_$(basename "$(dirname "$pkg")").log" 2>&1; echo "build $pkg rc=$? in $(( $(date +%s) - t )) s")
}
