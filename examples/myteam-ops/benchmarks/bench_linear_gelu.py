"""Benchmark myteam::linear_gelu (C = epilogue(A @ B, bias)) against the unfused reference in the same run.

    python benchmarks/bench_linear_gelu.py [--dtypes float32,bfloat16] [--sizes 1024,4096,8192x8192x1024]
                                          [--json out.json] [--plot out.png] [--device cpu] [--no-compile]

Problems are N x N x N, or M x N x K written MxNxK (A is M x K, B is K x N; these are drawn in a panel
of their own); the figure of merit is TFLOP/s = 2 M N K / time. float32 is reported twice:
"float32" with TF32 off for both (true float32 arithmetic, cuBLAS on its SIMT path), and
"float32+tf32" with torch.backends.cuda.matmul.allow_tf32 = True, where cuBLAS uses tensor cores
with 10-bit mantissas; linear_gelu's float32 product is cuBLAS's and follows the setting too, so both
rows compare like with like.
Baselines: eager = reference() (torch.matmul, then the epilogue as separate ops),
compile = torch.compile(reference, mode="max-autotune-no-cudagraphs"), which may fuse the epilogue into
a Triton GEMM of its own (the first call autotunes: minutes).

--backward times a training step instead, out.backward(grad) through autograd (6 M N K operations: the
forward's product and the backward's two), with "vjp", the op with its stub
(_backward_vjp), beside the op's generated backward.
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
        op=lib.linear_gelu,
        reference=lib.ops.linear_gelu.reference,
        stub=harness.vjp_stub(lib.ops.linear_gelu),  # --backward: the op with its vjp stub, the column "vjp"
        bias=True,
        compile_mode="max-autotune-no-cudagraphs",
    )


def main(argv=None) -> None:
    harness.main_matmul(__doc__, argv, races, package="myteam_ops", op="linear_gelu",
                        title="linear_gelu: C = (acc + bias) * sigmoid(1.702 * (acc + bias)), acc = A @ B",
                        dtypes=DTYPES, cuda_sizes=CUDA_SIZES, cpu_sizes=CPU_SIZES)


if __name__ == "__main__":
    main()
