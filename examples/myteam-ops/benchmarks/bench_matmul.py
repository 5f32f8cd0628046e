"""Benchmark myteam::matmul (C = A @ B) against torch.matmul (cuBLAS) in the same run.

    python benchmarks/bench_matmul.py [--dtypes float32,bfloat16] [--sizes 1024,4096,8192x8192x1024]
                                          [--json out.json] [--plot out.png] [--device cpu] [--no-compile]

Problems are N x N x N, or M x N x K written MxNxK (A is M x K, B is K x N; these are drawn in a panel
of their own); the figure of merit is TFLOP/s = 2 M N K / time. float32 is reported twice:
"float32" with TF32 off for both (true float32 arithmetic, cuBLAS on its SIMT path), and
"float32+tf32" with torch.backends.cuda.matmul.allow_tf32 = True, where cuBLAS uses tensor cores
with 10-bit mantissas; matmul's float32 product is cuBLAS's and follows the setting too, so both
rows compare like with like.
Baselines: eager = torch.matmul, compile = torch.compile(torch.matmul).

--backward times a training step instead, out.backward(grad) through autograd (6 M N K operations: the
forward's product and the backward's two).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # harness.py, beside this script
import harness  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16"]
CUDA_SIZES = "512,1024,2048,4096,8192,8192x8192x1024"
CPU_SIZES = "64,128,256,512"


def races(lib):  # lib is myteam_ops, imported by the harness once the arguments are parsed
    return harness.Races(
        op=lib.matmul,
        reference=lib.ops.matmul.reference,
    )


def main(argv=None) -> None:
    harness.main_matmul(__doc__, argv, races, package="myteam_ops", op="matmul",
                        title="matmul: C = A @ B",
                        dtypes=DTYPES, cuda_sizes=CUDA_SIZES, cpu_sizes=CPU_SIZES)


if __name__ == "__main__":
    main()
