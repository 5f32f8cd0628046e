#!/usr/bin/env bash
# The recorded commands that produce examples/. tests/test_golden.py runs each `kernelgen new`
# line below into a temporary directory and compares the result with examples/ byte for byte.
# After changing templates/, run this script from the repository root and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
kernelgen new muladd --kind elementwise --inputs a,b,c --expr "a*b+c" --defaults --output examples --force
kernelgen new matmul --kind matmul --defaults --output examples --force
