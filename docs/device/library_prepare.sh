#!/usr/bin/env bash
# Generate, on the dev machine, the packages docs/device/library.sh builds on the device (copier is
# not installed there). They go to .device/ (ignored by git through .git/info/exclude; name it in
# the device call's `carry`).
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .device/lib_before_add .device/ns && mkdir -p .device/ns
# examples/myteam-ops before its last recorded `kernelgen add` (see examples/regenerate.sh).
kernelgen new myteam-ops --op muladd --inputs a,b,c --expr "a*b+c" --namespace myteam --defaults --output .device/tmp --force
kernelgen add matmul --kind matmul --defaults --package .device/tmp/myteam-ops
mv .device/tmp/myteam-ops .device/lib_before_add && rm -rf .device/tmp
# Three packages in one namespace: alpha (scale2, mm), beta (plus1), clash (mm again: a clash).
kernelgen new alpha --op scale2 --inputs x --expr "x*2" --namespace team --dtypes fp32 --arch-list 9.0 --defaults --output .device/ns
kernelgen add mm --kind matmul --dtypes fp32 --defaults --package .device/ns/alpha
kernelgen new beta --op plus1 --inputs x --expr "x+1" --namespace team --dtypes fp32 --arch-list 9.0 --defaults --output .device/ns
kernelgen new clash --op mm --kind matmul --namespace team --dtypes fp32 --arch-list 9.0 --defaults --output .device/ns
