#!/usr/bin/env bash
# The recorded commands that produce examples/. tests/test_golden.py runs each `kernelgen new`
# line below into a temporary directory and compares the result with examples/ byte for byte.
# After changing templates/, run this script from the repository root and commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
# Start from empty directories, so that files a template no longer produces do not linger (this
# also removes local builds of the examples). A user's op is brought forward with `kernelgen update`.
rm -rf examples/muladd examples/matmul
kernelgen new muladd --kind elementwise --inputs a,b,c --expr "a*b+c" --defaults --output examples --force
kernelgen new matmul --kind matmul --defaults --output examples --force
