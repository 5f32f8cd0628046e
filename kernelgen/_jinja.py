"""Jinja extension that gives the templates what is derived, never recorded.

The answers file records only what the user chose (name, kind, inputs, expr, ...). Everything
derived from those answers, such as the C++ and PyTorch forms of the expression, is computed here
at render time, so regenerating from an answers file (``kernelgen new --answers``, ``kernelgen
update``) always derives it with the current parser.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml
from jinja2 import Environment, pass_context
from jinja2.ext import Extension

from . import diff, rowplan
from ._version import __version__
from .error_model import (
    error_bound_python,
    gradient_error_bound_python,
    rowwise_gradient_error_bound_python,
    ulps_literal,
)
from .expr import parse
from .nodes import Num, RowRef, Var

#: Bump when the generated code changes; recorded in every generated op.
#: 2: the CUDA side is split into <op>_cuda.cpp (tensor code) and <op>_kernel.cu (kernel on raw
#:    pointers); the elementwise kernel launches one block per 256 x P packs, without a loop;
#:    the matmul tensor-core kernel uses ldmatrix + mma.sync instead of WMMA.
#: 3: a package is a library of ops: csrc/<op>/, ops/<op>.py, TORCH_LIBRARY_FRAGMENT, one _C,
#:    a loader that refuses an op some other library already defines; the merge ancestor is the
#:    compact record .kernelgen/generated.json.gz instead of the .kernelgen/base/ copy.
#: 4: the C++ of every op is on the LibTorch stable ABI by default (torch/csrc/stable, abi3 wheel,
#:    TORCH_TARGET_VERSION); `abi: full` (recorded, or absent in older answers) keeps the ATen code.
#: 5: the elementwise kernel picks its packs per thread at run time (occupancy API, bytes in flight,
#:    the expression's math cost); x ** n with a whole n is multiplications (opmath::ipow); a rowwise
#:    output keeps a reduction's per-element argument instead of computing it again.
#: 6: float16/bfloat16 math in opmath::fast_float; a multi-pack elementwise kernel is a candidate
#:    unless it spills; the CUTLASS sm_90a matmul path.
#: 7: memory-bound elementwise expressions run one pack per thread (the 2- and 4-pack kernels are
#:    not compiled); Triton ops launch directly on plain eager calls (_eager_launch_ok), and a Triton
#:    rowwise kernel loads the weights only the output reads after the reductions.
#: 8: the generated tests check every result against reference() in float64 on the same inputs, within
#:    an error bound derived from the expression (error_bound(), kernelgen/error_model.py), instead of
#:    one rtol/atol per dtype.
#: 9: the package holds each kind's kernels once (csrc/kernelgen/elementwise.cuh, gemm.cuh, gemm_sm90.cuh)
#:    and the Triton ops' eager fast path (_triton_eager.py); an op's kernel files are its formula (Op)
#:    and one instantiation per dtype.
#: 10: the package holds each kind's test suite and the error model once (<package>/testing/); an op's
#:    tests/test_<op>.py is its error_bound() and a class that runs its kind's suite on it.
#: 11: the package holds the rowwise kernels and CPU loop once (csrc/kernelgen/rowwise.cuh,
#:    rowwise_cpu.h); a rowwise op's steps (Op: the columns each step reads, the kept argument, the math
#:    type) sit in its <op>.h below the formula, and its kernel file is one instantiation per dtype.
#: 12: benchmarks/harness.py builds each kind's cases and runs main; an op's bench_<op>.py is what it races (Races).
#: 13: an elementwise CUDA C++ op on the stable ABI has a generated backward, <op>_backward (its gradients
#:    written from the expression by kernelgen.diff, one pass on CPU and CUDA); the vjp of reference()
#:    stays in ops/<op>.py as _backward_vjp.
#: 14: a rowwise CUDA C++ op on the stable ABI has a generated backward too: GradOp in its <op>.h (the
#:    backward's reductions and every column's gradient), the kernels in csrc/kernelgen/rowwise.cuh and
#:    rowwise_cpu.h; the weights' gradients are column sums of per-slot partial sums (no atomics).
#: 15: a Triton elementwise or rowwise op has a generated backward too: <op>_backward (a triton_op) in its
#:    ops/<op>.py, its kernel and its CPU implementation written from the expression by kernelgen.diff.
#: 16: a rowwise CUDA C++ op holds rows longer than one block takes (16384 elements) in the registers of a
#:    thread-block cluster on sm_90 (cluster_rows_kernel in csrc/kernelgen/rowwise.cuh: up to 16 blocks a
#:    row, the reductions completed through distributed shared memory), reading each element once; and a
#:    costly per-element term several steps read is a shared term (<op>_shared<k> in <op>.h, _s<k> in the
#:    steps), which the register kernels compute once per element and keep in registers.
#: 17: a matmul op with an epilogue has a generated backward (<op>_epilogue_grad, <op>_with_acc, <op>_backward).
#: 18: the rowwise cluster kernel completes a maximum and its sum of exp(f - max(f)), or a mean and its sum of
#:    squared deviations, in one exchange between its blocks (Op::kOnline and kCentered in <op>.h, written
#:    only where the op has such a pair).
#: 19: the rowwise CUDA register kernels' launch (forward and backward) reads the compiled builds' local
#:    memory and takes a narrow build, the row in half the registers, where the dense build spills more.
#: 20: the rowwise CUDA backward's scalar path (misaligned rows) holds rows of at most 512 threads in
#:    registers; longer ones take the multi-pass kernel (no 1024-thread scalar builds: ptxas took minutes).
#: 21: a rowwise CUDA op's backward has shared terms too (<op>_grad_shared<k> in <op>.h, GradOp::kShared): a
#:    costly per-element term several of its steps read is computed once per element and kept in registers.
#: 22: the backward's shared terms may read per-row values (a term's level: computed once the reductions
#:    it reads are known), and every masked max's or min's argument is such a term (no mask calls a function).
#: 23: the rowwise CUDA backward has a cluster build (grad_cluster_rows_kernel): a row split over the blocks
#:    of a thread-block cluster, for rows whose one-block build needs 1024 threads and spills, or that no
#:    block holds.
#: 24: the rowwise CUDA backward evaluates a float16 or bfloat16 row's derivatives in opmath::fast_float
#:    (GradOp::kFastMath), as the forward and the elementwise and matmul backwards do.
#: 25: fast_float's division (opmath::fast_divide) is __fdividef with its operands scaled outside its range,
#:    not inline div.full.f32: the compiler computes a division by per-row values once per row, and a repeated
#:    one once.
#: 26: a rowwise suite computes the exact gradients and their bounds a piece of rows at a time (GRAD_CHUNK;
#:    ErrorModel.column_rows): a heavy derivative's bounds took 18 GiB at (700, 16400), 4 GiB now.
#: 27: the rowwise CUDA backward keeps each thread's weight sums together ([thread][weight][element], an odd
#:    stride): every sum at a fixed offset from one address, where [weight][element][thread] over a block's
#:    threads (a run-time count) took an index register per sum and spilled.
#: 28: the rowwise backward's shared terms are found inside its masks' comparisons too: abs(u)'s sign
#:    [u > 0] - [u < 0] reads u's term instead of computing u again in every step.
#: 29: the rowwise backward's launch takes the narrow build where the wide one's unrolled code would outgrow the
#:    instruction cache (GradOp::kCode, kernelgen.cost.own_code: an accurate sin or cos inlines about 100).
#: 30: the rowwise CUDA multi-pass kernels (forward and backward) fold every reduction of a pass in one loop
#:    over the row (Op::kPass, GradOp::kPass: the reductions that read nothing of each other), streaming the
#:    row once a pass instead of once a reduction.
#: 31: the rowwise CUDA backward's register and cluster kernels complete every reduction of a pass with one
#:    barrier (one exchange between a cluster's blocks); GradOp numbers its reductions pass by pass.
#: 32: the rowwise backward's gradients divide once where one reciprocal serves several quotients (a per-row
#:    denominator; a row-varying one, or its powers, divided by more than once: diff._reciprocals), and
#:    -(p - q) stays a negation, sharing p - q with the rest of the gradient.
#: 33: the rowwise backward reads a mean of what another of its reductions sums as that sum over the row
#:    length (one reduction fewer); products of the same factors in any order add up (2 * (a * b) for
#:    a * b + b * a); a denominator's factors each take their reciprocal (a / (d * r) -> a * (1 / d) * (1 / r));
#:    names used only inside one subtree they share take the chain rule through it (diff._shared_subtrees).
#: 34: the rowwise CUDA backward takes the cluster build for rows one block holds in 1024 threads (where that
#:    build spills) in the 2-byte types only; float32 keeps the wide build.
#: 35: the backward's chain rule runs through nested shared subtrees (diff._chain_through: x2 and x3 of
#:    tanh((x3 * 2 - x2) / d) share the adjoint of x3 * 2 - x2), and an elementwise op's (and a matmul
#:    epilogue's) gradients take one reciprocal for several quotients and the shared adjoints, as the rowwise
#:    backward's do.
#: 36: the rowwise CUDA backward builds its cluster kernel for the 2-byte types only (version 34 already left
#:    float32 out of every launch rule: its float32 build was dead code, ptxas time and binary size); a
#:    gradient's quotient by a number multiplies by the number's reciprocal, a literal (version 35 wrote
#:    1.0 / 3.0, which the tests' error bound could not evaluate).
#: 37: the rowwise CUDA backward's multi-pass kernel, with weights, adds up a group of 8 rows' contributions in
#:    registers and writes its partial sums once a group (not read and written at every row), at two blocks
#:    an SM; the generated suite checks the weights' gradients over 5000 rows of 16400.
#: 38: without weights, that kernel keeps a row's reductions in registers as before version 37 (not in shared
#:    memory behind a barrier): ptxas gave version 37's build 6-30 more registers a thread than version 36's.
#: 39: without weights, that kernel sets no minimum of blocks an SM in its launch bounds, as before version 37:
#:    the minimum of one let ptxas take more registers (same instructions as version 36's build now).
#: 40: float16 and bfloat16 CUDA kernels compute pow(x, y) for a finite x > 0 as __expf(y * logf(x))
#:    (opmath::fast_float), so pow and log of one value share a logf; the error model counts its error.
#: 41: the rowwise CUDA backward's launch asks the occupancy API and the device's attributes once per device
#:    and build (not at every call), and a backward without weights of more than 6 reductions, whose
#:    1024-thread build would hold one 16-byte vector of each column a thread, takes the multi-pass kernel
#:    for those rows (GradLaunch::kWideHoldsBarriers); that build is no longer compiled. The rowwise suite's
#:    backward test adds aligned rows of 4096 and 8192 (the 1024-thread builds' and that rule's lengths).
#: 42: the launches' per-device answers (elementwise packs, rowwise spills, cluster fits, occupancy, device
#:    attributes) are kept by one class, PerDevice, in csrc/kernelgen/per_device.cuh; the launches pick
#:    as before.
#: 43: the rowwise CUDA backward's cluster build takes only rows longer than 16384 (kClusterMinCols): shorter
#:    2-byte rows take the register kernel or the multi-pass kernel, 0.47-0.89x the cluster build's time in 11 of
#:    20 cells of ten bfloat16 backwards and within 1.1% in the other nine (H200, stop 60).
#: 44: the rowwise CUDA backward has a cluster build only with weights: without them the multi-pass kernel took
#:    0.35-0.87x its time in all 34 cells of eleven backwards at 2-byte rows of 32768-131072 (H200, stops 60-61).
#: 45: without weights that cluster build is compiled again, and taken only where two of its blocks share an SM
#:    (GradLaunch::cluster_pays): with one block an SM it lost all 66 cells measured; the one build of 64 registers
#:    (x * tanh(max(x))) ran 1.23-1.34x faster in it than in version 44's multi-pass kernel (H200, stop 61).
#: 46: opmath's min and max of float are min.NaN.f32 / max.NaN.f32 on sm_80 and later, one instruction where the
#:    compare-and-select takes three: the forward of 99 cells of eleven rowwise ops took a median 0.951 of version
#:    45's time, 57 cells 3% or more faster (0.64-0.97), 2 slower (1.03-1.04); float16 max/min-heavy rows 0.64-0.78
#:    (H200, stop 62).
#: 47: opmath's sin and cos are declared const in device code, so that a call repeated with one argument is computed
#:    once (nvcc merges repeated exp, log, tanh on its own, not sinf/cosf, whose slow path writes a local array):
#:    seed 64's r09 (cos(u) * cos(u)) forward 0.75-0.86x the time in float16/bfloat16, r06 0.91-0.93x, none of 63
#:    cells slower; the backward of 63 cells a median 1.000, 4 faster (0.93-0.95), none slower (H200, stop 63).
#: 48: a Triton rowwise backward whose kernel of one program a row spills more than 256 bytes a thread at its warps
#:    and at twice as many takes the long kernel's passes instead (_triton_rowwise.one_row_warps, as the forward's
#:    rows_warps): seed 65's r03_tl and r06_tl spilled 1.6-2.3 KB a thread at rows of 16384 and ran their backward
#:    at 4-14% of a copy, fwd+bwd 0.24-0.55x of compile (H200, stop 64, version 47). On the H200 (stop 65) it did
#:    not pay: that GPU's Triton spilled 182 bytes at 32 warps, within 256, and kept the kernel (2.5-2.9 ms).
#: 49: one rule for the Triton backward's register kernels (_triton_rowwise.backward_fit), fitted to every path
#:    forced and timed on an H200 (docs/device/backward_paths.py, stop 65): 64 bytes of spills tolerated (16 for
#:    the rows kernel past rows of 4096), twice the warps where one program fills an SM (the rows kernel, which
#:    prefetches, only where it spills). Backward alone at rows of 4096, seed 65: r02_tl-r04_tl and r06_tl
#:    1.3-2.2x faster; rows of 16384: r03_tl 2.4-2.9x, r06_tl 3.6-4.6x faster.
#: 50: the Triton backward's long kernel holds 4 elements a thread (float32 4096 at 32 warps; 2-byte types 2048 at
#:    16 warps with the forward's cache hints) instead of 16 (4096 at 8 warps, 128-244 registers): seed 68's ten
#:    expressions at rows of 16384 and 65536, 1.23x faster in float32 and 1.10-1.16x in bfloat16 (geometric means,
#:    H200, stop 66, docs/results/stop66/paths_long.txt).
#: 51: the Triton forward's rows kernel at rows of 16384 keeps its registers where it spills at most 16 bytes a
#:    thread (_triton_rowwise.FORWARD_SPILL_TOLERATED; it took the long kernel on any spill): seeds 68-69 in
#:    float16/bfloat16 on an H200 (stop 66), 1.28-1.39x faster in 6 of the 10 cells it changes, 1.05-1.08x slower in 2.
#: 52: the Triton backward's weights' kernel takes a tile of 16 x 64 where its 64 x 64 build spills more than 16 bytes
#:    a thread (_triton_rowwise.weight_tile): seed 72 at rows of 16384 on an H200 (stop 67), r03_tl 1.74-1.97x faster,
#:    r05_tl and r08_tl float32 1.13-1.14x, r08_tl bfloat16 0.97x; the cells spilling 8 bytes or less keep 64 x 64.
#: 53: a Triton rowwise op with weights computes a long row's inputs' gradients in the weights' kernel, beside
#:    the weights' contributions, and its long backward kernel writes the per-row values only
#: 54: the Triton weights' kernel sums each weight lane by lane over its tiles and across the tile's rows once at
#:    the end, on a tile of 16 x 64 (8 x 64 where that spills more than 16 bytes): on an H200 (stop 69), the
#:    backward alone 0.99-1.18x as fast as version 53 in float32 and 1.14-1.68x in bfloat16 on seed 74 at rows of
#:    16384, and 1.12x faster at the median of a fresh draw (seed 75, rows of 16384 and 65536)
#: 55: the Triton weights' kernel takes the narrow tile (8 x 64) also where its 16 x 64 build fits fewer than 4
#:    programs an SM (_triton_rowwise.WEIGHT_PROGRAMS_PER_SM): fitted on seeds 74 and 75 on an H200 (stop 70),
#:    where 8 x 64 ran within 0.5% or faster (up to 1.50x) in the 21 cells that rule narrows and up to 1.12x
#:    slower in the 25 it keeps. On seed 76, drawn after the fit (stop 71), the 16 cells it narrows ran 1.00-1.34x
#:    faster than 16 x 64 and the 12 it keeps as fast. The generated rowwise test of the backward's _needs runs a
#:    long row (5 x 65537) beside the short one.
#: 56: a Triton rowwise backward computes a masked argument's subterms that its gradients read too once, exact
#:    (_e<i>), where the gradients are computed: on seed 76 on an H200 (stop 71), forward+backward replayed from
#:    CUDA graphs in the 32 cells of the 8 ops it changes, a median 0.988 of version 55's time (0.94-1.03), in two
#:    rounds; 9 cells 3% or more faster, one 3% slower in both rounds (r06_tl bfloat16 16384)
#: 57: where one program of the Triton rowwise backward's kernel of one program a row fills an SM, the launch runs
#:    as many programs as the GPU holds at STAGES=2 (_triton_rowwise.backward_pipeline), each looping over its rows,
#:    Triton's software pipeline copying a program's next row into shared memory while it computes its own; at
#:    STAGES=1 the kernel is one row's body (_<op>_backward_row, inlined), as before. On seed 78 on an H200 (stop
#:    72, drawn after it was written), forward+backward replayed from CUDA graphs ran 8-19% faster in the 6 cells
#:    it pipelines at rows of 4096 and as before in the 14 others timed, in two rounds (a loop form of the kernel
#:    at STAGES=1 took up to 60 more registers and ran 2.5-5% slower at rows of 1024). The generated rowwise tests
#:    add many aligned rows ((300, 4096), (200, 16384)) on the GPU
#: 58: the Triton rowwise backward's rows kernel (ops with weights) runs staged too, through Triton's software
#:     pipeline (its next row copied into shared memory), where one program fills an SM and its unstaged build,
#:     which holds the next row in registers, spills; the row's body is one inlined function
#:     (_<op>_backward_rows_step). On an H200 (stop 73), forward+backward replayed from CUDA graphs at rows of 4096:
#:     seed 79, 0.72-1.01 of version 57's time (4 cells 5-28% faster, none slower), and seed 80, drawn after the rule
#:     was written, 0.65-1.06 (r01_tl float32 35% faster, 2 more cells 3-4% faster; 4 cells 3.6-5.6% slower).
#: 59: the generated comments say what each rule does and why in the present tense, with their figures, and name
#:     none of kernelgen's history (its stops, its draws' seeds, its docs' files); tests/test_golden.py keeps it so.
#: 60: where the Triton rowwise backward's rows kernel spills past the tolerance at both of backward_fit's warps,
#:     its staged build (the next row in shared memory) where that fits (_triton_rowwise.backward_staged), before
#:     the kernel of one program a row and the weights' kernel; one launch helper for the register kernels
#:     (backward_launch). On an H200 (stop 75), seed 81 (drawn after it was written), forward+backward replayed
#:     from CUDA graphs at rows of 4096, two rounds: r00_tl float32 0.82 of version 59's time (its backward from
#:     45% to 58% of a copy), the 19 other cells 0.99-1.01.
#: 61: a Triton rowwise op's backward has one EDIT HERE block for a row in registers, _<op>_backward_math (its
#:     per-row values, its inputs' gradients and its weights' contributions), which _<op>_backward_row and
#:     _<op>_backward_rows_step call (Triton inlines it) instead of a copy each. On an H200 (stop 75), seed 81,
#:     the same cells: 0.996-1.011 of version 59's time (62 of 72 kernels of seed 82 compile to the same PTX
#:     instructions; the rest add two weights' sums in the other order).
#: 62: the Triton rowwise launch keeps its answers (_triton_rowwise._answer: backward_launch, weight_tile) for the
#:     calls seen, at most ANSWERS_KEPT of them, so a call seen before asks resident() nothing and builds no key of
#:     strings. The same answers and launches; on the dev machine's CPU (docs/device/launch_host_cost.py, seed 81's
#:     ten ops at rows of 4096, two runs beside other work): a register kernel's launch answer from 3.1-9.5 us a
#:     call to 1.3-4.6 (10.8-30.1 to 1.3-5.4 where every build spills), the weights' tile from 11-27 us to 0.9-4.2.
#: 63: the Triton ops' grid and block arithmetic on the host in plain integers (_triton_eager.cdiv and
#:     next_power_of_2): triton.cdiv and triton.next_power_of_2 are constexpr functions, about 1.6 us a call from
#:     Python, and a rowwise backward with weights made up to ten such calls a step.
#: 64: a Triton rowwise backward's reductions compute a masked argument's subterms exact, as the mask and the
#:     gradients do (diff.emit's exact_nodes), instead of a contracted copy beside the exact one: the compiler then
#:     computes each subterm, and each function of it, once. PTX instructions an element of the one-row backward
#:     (docs/device/triton_ptx_count.py): seed 81's r07_tl 434 -> 311, r08_tl 270 -> 168; seed 83's r01_tl 381 -> 283,
#:     r09_tl 348 -> 247; ops without a masked max or min unchanged. On an H200, forward+backward replayed from CUDA
#:     graphs at rows of 4096 and 16384: 0.80-1.01 of version 63's time (seed 81's r07_tl, r08_tl, r00_tl; seed 83's
#:     r01_tl, r09_tl), none slower by 3%; r07_tl bfloat16 4096 from 0.79x of compile to 0.96x.
#: 65: a Triton rowwise op's eager training path saves the forward's per-row values that its backward reads (a few
#:     floats a row; _<op>_launch's save, a run-time flag of the forward's kernels), and the backward's long kernel loads them (KNOWN)
#:     instead of computing them again: on the rows too long for registers, every drawn op's backward passes over
#:     the row before its gradients fall to one (from 2-4). The forward computes the arguments of the maxima and
#:     minima the backward masks exact, as the backward does, so that a saved maximum is the one its mask compares
#:     with. The registered op (torch.compile's) computes them again, as before. On an H100 (with the flag still a
#:     constexpr, which changed float32 LayerNorm's output by an ulp; now a run-time argument), forward+backward from
#:     CUDA graphs at 2^26 elements: seed 84's r02_tl, r05_tl, r07_tl 1.04-1.36x faster than computing them again at
#:     rows of 16384 and 65536, LayerNorm 1.17-1.21x at 65536, softmax unchanged.
#: 66: a Triton rowwise op whose forward saves per-row values registers <op>_train (the output and those values),
#:     which the public function calls where autograd records the call through the dispatcher (torch.compile, a
#:     mode), and <op>_backward takes them as Tensor? _known: the saved values serve compiled training too.
#: 67: the forward's rows kernel at its longest rows (16384) in float32 and float64, which start at 32 warps, gives way
#:     to the long kernel where that build spills more than its 64 registers hold (WIDE_SPILL_TOLERATED, 256 bytes;
#:     rows_warps asked for no count there before): seed 84's r07_tl spilled 404 bytes a thread in float32 (its forward
#:     about 2.8 of its 4.4 ms forward+backward).
#: 68: one test a package for "autograd records this call" (_triton_eager.autograd_records), read by eager_launch_ok,
#:     eager_autograd_ok and the public function's choice of <op>_train; <op>_train's body narrows the launch's values
#:     with an assert instead of a type: ignore.
#: 69: a CUDA rowwise op's CPU implementation and CPU backward are one copy a package (kernelgen/rowwise_cpu_op.h:
#:     CpuForward, CpuBackward: the contiguous copies, the outputs, the tasks of rows and the weights' partial sums);
#:     the op's .cpp keeps its checks, its dtype dispatch and its registration.
#: 70: the same for the rest of the tensor code of the stable-ABI elementwise and rowwise ops: kernelgen/tensors.h
#:     (contiguous_all, with_grad) and cuda_op.h (CudaArgs: the device guard, the contiguous copies, the stream) under
#:     elementwise_cpu_op.h, elementwise_cuda_op.h and rowwise_cuda_op.h (CpuForward / CudaForward, CpuBackward /
#:     CudaBackward: the outputs, the loops, the weights' partial-sum buffer, the launch's call); the op's .cpp and
#:     <op>_cuda.cpp keep their checks, their dispatch over the op's dtypes and their registration.
TEMPLATE_VERSION = "70"

#: Per dtype: the ATen enumerator (full ABI), the stable ScalarType enumerator and the torch name. The
#: C++ element types are the ABI's spellings (spec.ABI_SPELLINGS, which the templates see as `spell.c`).
DTYPE_INFO: dict[str, dict[str, str]] = {
    "float32": {"at": "at::kFloat", "stable": "ScalarType::Float", "torch": "torch.float32"},
    "float64": {"at": "at::kDouble", "stable": "ScalarType::Double", "torch": "torch.float64"},
    "float16": {"at": "at::kHalf", "stable": "ScalarType::Half", "torch": "torch.float16"},
    "bfloat16": {"at": "at::kBFloat16", "stable": "ScalarType::BFloat16", "torch": "torch.bfloat16"},
}

# The answers a package records: the package-level ones. The per-op questions of copier.yml
# (op_name, kind, ...) are rendering details; each op's answers are recorded inside `ops`.
_RECORDED = ("name", "package", "namespace", "arch_list", "abi", "ops")


def _user_names(context: Any, idents: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The user's names of ``idents`` (an op's `names` answer maps identifier -> name; without it
    the names are the identifiers), and the map back from name to identifier."""
    names = context.get("names") or {}
    users = tuple(names.get(ident, ident) for ident in idents)
    return users, dict(zip(users, idents, strict=True))


@pass_context
def expression(context: Any, source: str, inputs: list[str]) -> dict[str, Any]:
    """An elementwise expression's forms. ``inputs`` are the identifiers of the generated code; the
    expression itself uses the user's names, and is emitted over the identifiers."""
    users, to_ident = _user_names(context, inputs)
    parsed = parse(source, users).renamed(to_ident)
    return {
        "canonical": parsed.source,
        "cpp": parsed.cpp("acc_t"),
        "triton": parsed.triton("ACC"),
        "torch": parsed.torch(),
        "positive_domain": parsed.positive_domain,
        "functions": list(parsed.functions),
        "fused_torch": parsed.fused_torch(),
        "math_cost": parsed.math_cost,
    }


@pass_context
def rowwise(context: Any, source: str, inputs: list[str], weights: list[str]) -> dict[str, Any]:
    """A rowwise expression's evaluation plan (:meth:`ParsedExpr.emit_plan`) and its facts, emitted
    over the identifiers of the generated code (see :func:`expression`)."""
    users, to_ident = _user_names(context, inputs)
    user_weights, weight_idents = _user_names(context, weights)
    parsed = parse(source, users, weights=user_weights, rowwise=True).renamed({**to_ident, **weight_idents})
    return {
        "canonical": parsed.source,
        "positive_domain": parsed.positive_domain,
        "fused_torch": parsed.fused_torch(),
        **parsed.emit_plan("acc_t", "ACC"),
    }


@pass_context
def error_bound(context: Any, source: str, inputs: list[str], weights: list[str] | None = None,
                rowwise: bool = False, leaf_errors: dict[str, str] | None = None) -> str:
    """The source of the generated tests' error_bound() function (:mod:`kernelgen.error_model`),
    over the identifiers of the generated code (see :func:`expression`)."""
    users, to_ident = _user_names(context, inputs)
    user_weights, weight_idents = _user_names(context, list(weights or ()))
    parsed = parse(source, users, weights=user_weights, rowwise=rowwise)
    return error_bound_python(parsed, leaf_errors=leaf_errors, names={**to_ident, **weight_idents})


@pass_context
def backward(context: Any, source: str, inputs: list[str]) -> dict[str, Any]:
    """An elementwise expression's gradients (:func:`kernelgen.diff.elementwise_vjp`: ``_grad * d out /
    d input`` for each input, in order), as C++ over the identifiers of the generated code: the shared
    terms (``_t0``, ...: :func:`kernelgen.diff.emit_cse`) and one expression per input."""
    users, to_ident = _user_names(context, inputs)
    parsed = parse(source, users).renamed(to_ident)
    grads = diff.elementwise_vjp(parsed)
    trees = [grads.get(name, Num(0.0)) for name in parsed.inputs]
    bindings, finals = diff.emit_cse(trees, "cpp", acc_type="acc_t")
    out: dict[str, Any] = {"bindings": bindings, "grads": finals, "canonical": [diff.canonical(tree) for tree in trees],
                           "zero": [isinstance(tree, Num) and tree.value == 0 for tree in trees]}
    # The Triton kernel's and the CPU implementation's forms (a Triton op's backward).
    for style in ("triton", "torch"):
        style_bindings, style_grads = diff.emit_cse(trees, style, acc="ACC")
        out[style] = {"bindings": style_bindings, "grads": style_grads}
    return out


def epilogue_backward(source: str, bias: bool) -> dict[str, Any]:
    """A matmul epilogue's gradients (:func:`kernelgen.diff.elementwise_vjp` over ``acc`` and, with a bias,
    ``bias``: ``_grad * d out / d acc`` and the bias's per-element contribution), as C++ (``bindings``,
    ``grads``) and PyTorch (``torch``), with the facts the templates decide by: whether the gradients read
    ``acc`` (``saves_acc``: the training forward then stores the accumulator, the backward's one input
    beside ``_grad``) and ``bias`` (``reads_bias``), and whether ``d out / d acc`` is 1 (``dacc_is_grad``:
    the GEMMs of the backward then read ``_grad`` itself)."""
    names = ["acc", "bias"] if bias else ["acc"]
    parsed = parse(source, names, require_all=False)
    grads = diff.elementwise_vjp(parsed)
    trees = [grads.get(name, Num(0.0)) for name in names]
    bindings, finals = diff.emit_cse(trees, "cpp", acc_type="acc_t")
    torch_bindings, torch_finals = diff.emit_cse(trees, "torch")
    reads = set().union(*(diff.variables(tree) for tree in trees))
    return {
        "bindings": bindings, "grads": finals, "canonical": [diff.canonical(tree) for tree in trees],
        "torch": {"bindings": torch_bindings, "grads": torch_finals},
        "saves_acc": "acc" in reads, "reads_bias": "bias" in reads, "dacc_is_grad": trees[0] == Var(diff.GRAD),
        "error_bound": gradient_error_bound_python(parsed, leaf_errors={"acc": "acc_error"}),
    }


def _in_pass_order(backward: diff.RowwiseBackward) -> diff.RowwiseBackward:
    """``backward`` with its stages numbered pass by pass (:func:`kernelgen.rowplan.pass_of`, the order kept within
    a pass): the CUDA register and cluster kernels complete the reductions of a pass together, which needs them
    consecutive. Every stage still comes after those it reads, so the values are the same."""
    passes = rowplan.pass_of(backward.stages, diff.walk)
    order = sorted(range(len(passes)), key=lambda k: (passes[k], k))
    if order == list(range(len(order))):
        return backward
    number = {old: new for new, old in enumerate(order)}

    def renumber(tree: Any) -> Any:
        return diff.transform(tree, lambda node: RowRef(number[node.index])
                              if isinstance(node, RowRef) and node.index in number else None)

    return dataclasses.replace(
        backward,
        stages=tuple(dataclasses.replace(backward.stages[old], arg=renumber(backward.stages[old].arg)) for old in order),
        input_plan={name: renumber(tree) for name, tree in backward.input_plan.items()},
        weight_plan={name: renumber(tree) for name, tree in backward.weight_plan.items()},
    )


@pass_context
def rowwise_backward(context: Any, source: str, inputs: list[str], weights: list[str]) -> dict[str, Any]:
    """A rowwise expression's backward (:func:`kernelgen.diff.rowwise_vjp`) as C++ over the identifiers of
    the generated code. The backward is itself a rowwise op whose columns are ``_grad`` (the output's
    gradient), the inputs and the weights: ``reductions`` (each with ``func``, ``cpp``, ``canonical``,
    ``forward``, the columns it ``reads`` and the ``shared`` terms it reads), then per element the ``grads`` of the inputs and the weights' contributions of one row,
    over the subexpressions ``bindings``; ``reads`` are the columns the gradients read, ``grads_shared``
    the shared terms. ``shared``: the per-element terms several steps read (``cpp``, ``canonical``, the
    ``earlier`` terms it reads, the columns it ``reads``, itself or through them, the stage whose ``mask``
    it is, and its ``level``: the reductions it reads, :func:`kernelgen.rowplan.level`). The row length (:class:`kernelgen.diff.RowLen`, rare) is printed as ``_r[N]``, the
    slot after the N reductions, which the kernels fill with the row length."""
    users, to_ident = _user_names(context, inputs)
    user_weights, weight_idents = _user_names(context, weights)
    parsed = parse(source, users, weights=user_weights, rowwise=True).renamed({**to_ident, **weight_idents})
    backward = _in_pass_order(diff.rowwise_vjp(parsed))
    length = RowRef(len(backward.stages))

    def for_cpp(tree: Any) -> Any:
        return diff.transform(tree, lambda node: length if isinstance(node, diff.RowLen) else None)

    columns = [diff.GRAD, *parsed.inputs, *parsed.weights]
    plans = {**backward.input_plan, **backward.weight_plan}
    stages = backward.stages

    def mask_of(node: Any) -> int | None:
        # The stage k of a mask [f == r_k]: f is the argument of max or min stage k.
        if (isinstance(node, diff.Compare) and node.op == "==" and isinstance(node.right, RowRef)
                and node.right.index < len(stages) and stages[node.right.index].func in ("max", "min")
                and node.left == stages[node.right.index].arg):
            return node.right.index
        return None

    # A mask [f == r_k] must see the very bits of f the reduction saw: f is a shared term (_s<j>, the first
    # ones), computed once per element with exact sums and products (diff.emit(exact=True): no fused
    # multiply-add, however each copy is compiled), and read by the reduction, its masks and every step that
    # computes f. Where f reads per-row values (max(x * x - mean(x))), the term has a level (rowplan.level):
    # the kernels compute it once those reductions are known.
    found: set[int] = set()
    for tree in (*plans.values(), *(stage.arg for stage in stages)):
        for node in diff.walk(tree):
            if (k := mask_of(node)) is not None:
                found.add(k)
    # One term per distinct argument (max(f) and min(f) share theirs); none for a bare column, which is exact
    # as loaded. A masked term reads an earlier one where its argument holds that one's (max(f - mean(x))
    # after max(f)): both are exact, so the bits are those of computing it whole.
    term_of: dict[int, int] = {}
    terms: list[Any] = []
    mask_terms: list[int] = []  # the first stage whose mask reads each term
    for k in sorted(found):
        arg = stages[k].arg
        if isinstance(arg, (Var, Num)):
            continue
        same = [j for m, j in term_of.items() if stages[m].arg == arg]
        if same:
            term_of[k] = same[0]
            continue
        earlier = {stages[m].arg: Var(f"_s{j}") for m, j in term_of.items()}
        term_of[k] = len(terms)
        terms.append(diff.transform(arg, earlier.get))
        mask_terms.append(k)

    def for_kernel(tree: Any) -> Any:
        def rewrite(node: Any) -> Any:
            k = mask_of(node)
            if k is not None and k in term_of:
                return diff.Compare("==", Var(f"_s{term_of[k]}"), node.right)
            for stage_index, j in term_of.items():
                if node == stages[stage_index].arg:
                    return Var(f"_s{j}")
            return length if isinstance(node, diff.RowLen) else None
        return diff.transform(tree, rewrite)

    trees = [for_kernel(plans.get(name, Num(0.0))) for name in (*parsed.inputs, *parsed.weights)]
    stage_args = [for_kernel(stage.arg) for stage in stages]
    # The per-element terms several steps compute (a reduction's argument, the gradients), each computed
    # once per element as _s<k> (rowplan.share_steps), as the forward's are; in a backward bound by its
    # arithmetic (rowplan.LEVEL_MIN_COST), a term may read the reductions' per-row values (it then has a level).
    # The search enters the masks' comparisons: [u > 0] of abs(u) reads u's term as the gradient does.
    steps = [(arg,) for arg in stage_args] + [tuple(trees)]
    heavy = rowplan.steps_cost(steps, diff.children) >= rowplan.LEVEL_MIN_COST
    found_terms, rewritten = rowplan.share_steps(
        steps, first=len(mask_terms), rows=len(stages) if heavy else 0, kids=diff.children,
        substitute=lambda tree, old, new: diff.transform(tree, lambda node: new if node == old else None))
    terms += list(found_terms)
    stage_args = [arg for (arg,) in rewritten[:-1]]
    trees = list(rewritten[-1])
    levels: list[int] = []
    for term in terms:
        levels.append(rowplan.level(term, levels))
    columns_of: list[set[str]] = []
    for term in terms:
        used = diff.variables(term)
        columns_of.append({name for name in used if name in columns}
                          | {c for k, cols in enumerate(columns_of) if f"_s{k}" in used for c in cols})

    def uses(nodes: list[Any]) -> list[int]:
        used = set().union(*(diff.variables(node) for node in nodes))
        return [k for k in range(len(terms)) if f"_s{k}" in used]

    bindings, grads = diff.emit_cse(trees, "cpp", acc_type="acc_t")
    read = set().union(*(diff.variables(tree) for tree in trees))
    # The instructions an element of the kernel inlines: every step, and the terms, each once (GradOp::kCode).
    code = rowplan.steps_code([*((arg,) for arg in stage_args), tuple(trees), tuple(terms)], diff.children)
    return {
        "code": code,
        "passes": rowplan.pass_of(stages, diff.walk),
        "columns": columns,
        "reductions": [
            {
                "func": stage.func, "forward": stage.forward, "canonical": stage.canonical,
                "cpp": diff.emit(arg, "cpp", acc_type="acc_t"),
                "reads": [name in diff.variables(arg) for name in columns],
                "shared": uses([arg]),
            }
            for stage, arg in zip(backward.stages, stage_args, strict=True)
        ],
        "shared": [
            {"cpp": diff.emit(term, "cpp", acc_type="acc_t", exact=k < len(mask_terms)), "canonical": diff.canonical(term),
             "earlier": [f"_s{j}" for j in range(k)], "reads": [name in columns_of[k] for name in columns],
             "mask": mask_terms[k] if k < len(mask_terms) else None, "level": levels[k]}
            for k, term in enumerate(terms)
        ],
        "grads_shared": uses(trees),
        "bindings": bindings,
        "grads": grads,
        "reads": [name in read for name in columns],
        "uses_length": any(isinstance(node, diff.RowLen) for tree in (*plans.values(), *(s.arg for s in backward.stages))
                           for node in diff.walk(tree)),
        "canonical": [diff.canonical(plans.get(name, Num(0.0))) for name in (*parsed.inputs, *parsed.weights)],
    }


@pass_context
def rowwise_backward_python(context: Any, source: str, inputs: list[str], weights: list[str]) -> dict[str, Any]:
    """A rowwise expression's backward (:func:`kernelgen.diff.rowwise_vjp`) as Triton and PyTorch over the
    identifiers of the generated code, for a Triton op's ``<op>_backward``: per style (``triton``,
    ``torch``) the ``reductions`` (``func``, ``arg``: the per-element argument over the columns and the
    earlier reductions ``_r<k>``, ``canonical``, ``masked``), the ``bindings`` the gradients share and
    the ``grads`` of the inputs and the weights' contributions of one row, in order. The row length is
    ``_n``. A mask ``[f == r_k]`` of a max or min stage k reads ``_a<k>``, the name the kernel gives that
    stage's argument: the comparison then sees the very values the reduction saw, bit for bit."""
    users, to_ident = _user_names(context, inputs)
    user_weights, weight_idents = _user_names(context, weights)
    parsed = parse(source, users, weights=user_weights, rowwise=True).renamed({**to_ident, **weight_idents})
    backward = diff.rowwise_vjp(parsed)
    plans = {**backward.input_plan, **backward.weight_plan}
    masked: set[int] = set()

    def mask_names(node: Any) -> Any:
        if (isinstance(node, diff.Compare) and node.op == "==" and isinstance(node.right, RowRef)
                and backward.stages[node.right.index].func in ("max", "min")
                and node.left == backward.stages[node.right.index].arg):
            masked.add(node.right.index)
            return diff.Compare("==", Var(f"_a{node.right.index}"), node.right)
        return None

    trees = [diff.transform(plans.get(name, Num(0.0)), mask_names) for name in (*parsed.inputs, *parsed.weights)]
    stage_args = [diff.transform(stage.arg, mask_names) for stage in backward.stages]
    def masks_read(*nodes: Any) -> list[int]:
        # the masked stages whose argument these read, directly or through another's argument
        found: set[int] = set()
        todo = list(nodes)
        while todo:
            names = diff.variables(todo.pop())
            for k in masked:
                if f"_a{k}" in names and k not in found:
                    found.add(k)
                    todo.append(stage_args[k])
        return sorted(found)

    exact_args = {k: diff.emit(stage_args[k], "triton", acc="ACC", exact=True) for k in sorted(masked)}
    # A masked argument's subterms that the gradients read too (f's x / (y * y + 1.0) where the gradient of
    # max(sin(x / (y * y + 1.0)) * w) reads it again): each computed once, exact (_e<i>, children first), and read
    # by the kernels that compute gradients, both in the mask's _a<k> (the bits the reduction saw) and in the
    # gradients (which would otherwise compute it a second time, contracted). Terms that read a mask stay apart.
    in_grads = {node for tree in trees for node in diff.walk(tree)}
    shared: dict[Any, Any] = {}
    exact_bindings: list[tuple[str, str]] = []

    def share(node: Any) -> None:
        for kid in diff.children(node):
            share(kid)
        if (node in shared or node not in in_grads or diff.is_leaf(node) or isinstance(node, diff.Compare)
                or any(name.startswith("_a") for name in diff.variables(node))):
            return
        name = f"_e{len(exact_bindings)}"
        exact_bindings.append((name, diff.emit(diff.transform(node, shared.get), "triton", acc="ACC", exact=True)))
        shared[node] = Var(name)

    for k in sorted(masked):
        share(stage_args[k])
    # The other reductions' arguments compute those subterms exact too (diff.emit's exact_nodes): the kernel then
    # holds one copy of each, which the compiler computes once, and of every function of it (cos(u) in a sum and
    # in the gradients), where a contracted copy beside the exact one would compute both.
    exact_read = {k: diff.emit(diff.transform(stage_args[k], shared.get), "triton", acc="ACC", exact=True)
                  for k in sorted(masked)}
    # the long kernel's passes over the row (kernelgen.rowplan.pass_forms); an online sum's term computes first
    # the masked arguments its maximum's does not
    passes = rowplan.pass_forms(
        [rowplan.RowStage(stage.func, arg, stage.canonical) for stage, arg in zip(backward.stages, stage_args, strict=True)],
        [diff.GRAD, *parsed.inputs, *parsed.weights], lambda node: diff.emit(node, "triton", acc="ACC", exact_nodes=shared),
        diff.walk)
    # The forward's per-row values the backward reads (stage.forward), which the eager training path saves: the
    # long kernel loads them (_known) and takes only the passes of the backward's own reductions (pass_forms'
    # known). A masked one must hold the bits the backward's mask compares with, so the forward computes its
    # argument exact, as the backward does (forward_exact: the text over the forward's _r<k>). A masked stage
    # whose argument reads a reduction the forward does not number is not saved.
    number = {k: stage.forward for k, stage in enumerate(backward.stages) if stage.forward is not None}
    forward_exact: dict[int, Any] = {}
    for k in sorted(masked):
        reads = {node.index for node in diff.walk(stage_args[k]) if isinstance(node, RowRef)}
        if k in number and reads <= number.keys():
            forward_exact[number[k]] = diff.transform(
                stage_args[k], lambda node: RowRef(number[node.index]) if isinstance(node, RowRef) else None)
    saved = [k for k in number if k not in masked or number[k] in forward_exact]
    # The forward's reductions and output as its kernels print them, with every subterm of those arguments exact
    # (diff.emit's exact_nodes): one spelling of each, which the compiler computes once.
    exact_subterms = {node for tree in forward_exact.values() for node in diff.walk(tree) if not diff.is_leaf(node)}
    forward_plan = parsed.plan()
    forward_texts = {
        "reductions": [diff.emit(stage.arg, "triton", acc="ACC", exact_nodes=exact_subterms) for stage in forward_plan.reductions],
        "output": diff.emit(forward_plan.output, "triton", acc="ACC", exact_nodes=exact_subterms),
    } if forward_exact else None
    known_passes = rowplan.pass_forms(
        [rowplan.RowStage(stage.func, arg, stage.canonical) for stage, arg in zip(backward.stages, stage_args, strict=True)],
        [diff.GRAD, *parsed.inputs, *parsed.weights], lambda node: diff.emit(node, "triton", acc="ACC", exact_nodes=shared),
        diff.walk, known=saved)
    for forms in passes + known_passes:
        forms["before_sum"] = {j: [f"_a{q} = {exact_args[q]}" for q in masks_read(stage_args[j]) if q not in masks_read(stage_args[k])]
                               for j, k in forms["online"].items()}
    out: dict[str, Any] = {
        "canonical": [diff.canonical(plans.get(name, Num(0.0))) for name in (*parsed.inputs, *parsed.weights)],
        "zero": [isinstance(tree, Num) and tree.value == 0 for tree in trees],
        "masked": sorted(masked),
        # per reduction, and for the gradients: the masked stages whose argument (_a<k>) they read
        "reduction_masks": [masks_read(arg) for arg in stage_args],
        "grad_masks": masks_read(*trees),
        # a masked stage's argument with exact products (diff.emit): a kernel that computes it in two
        # passes over the row gets the same bits in both
        "exact_args": exact_args,
        # where the gradients are computed: the shared exact subterms (_e<i>), then each masked argument over them
        "exact_bindings": exact_bindings,
        "exact_read": exact_read,
        "long_passes": passes,
        # the saved per-row values: the backward's stages, in the order of the columns of the forward's _stats, the
        # forward's reductions they are, and the passes that remain; the forward's texts where it computes a masked
        # argument exact (None where it computes none)
        "saved": saved,
        "saved_forward": [number[k] for k in saved],
        "known_passes": known_passes,
        "forward": forward_texts,
    }
    for style in ("triton", "torch"):
        bindings, grads = diff.emit_cse([diff.transform(tree, shared.get) for tree in trees] if style == "triton" else trees,
                                        style, acc="ACC")
        out[style] = {
            "reductions": [
                {"func": stage.func, "arg": diff.emit(arg, style, acc="ACC", exact_nodes=shared if style == "triton" else ()),
                 "canonical": stage.canonical, "masked": index in masked}
                for index, (stage, arg) in enumerate(zip(backward.stages, stage_args, strict=True))
            ],
            "bindings": bindings,
            "grads": grads,
        }
    return out


@pass_context
def rowwise_gradient_error_bound(context: Any, source: str, inputs: list[str], weights: list[str]) -> str:
    """The source of the generated tests' grad_error_bound() for a rowwise op (:func:`kernelgen.
    error_model.rowwise_gradient_error_bound_python`), over the identifiers of the generated code."""
    users, to_ident = _user_names(context, inputs)
    user_weights, weight_idents = _user_names(context, weights)
    parsed = parse(source, users, weights=user_weights, rowwise=True)
    return rowwise_gradient_error_bound_python(parsed, names={**to_ident, **weight_idents})


@pass_context
def gradient_error_bound(context: Any, source: str, inputs: list[str]) -> str:
    """The source of the generated tests' grad_error_bound() (:func:`kernelgen.error_model.
    gradient_error_bound_python`), over the identifiers of the generated code."""
    users, to_ident = _user_names(context, inputs)
    return gradient_error_bound_python(parse(source, users), names=to_ident)


def _shape(op: dict[str, Any]) -> str:
    """The canonical expression with inputs and weights renamed by position: equal for the same formula."""
    inputs, weights = op["inputs"], op.get("weights") or []
    names = {name: f"_{index}" for index, name in enumerate(inputs)}
    names.update({name: f"_w{index}" for index, name in enumerate(weights)})
    parsed = parse(op["expr"], tuple(inputs), weights=tuple(weights), rowwise=op["kind"] == "rowwise")
    return re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: names.get(m.group(0), m.group(0)), parsed.source)


def twins(ops: list[dict[str, Any]], op_name: str) -> list[dict[str, Any]]:
    """The other ops of the package of the same kind that compute the same formula (a benchmark races them)."""
    me = next(op for op in ops if op["name"] == op_name)
    shape = _shape(me)
    return [
        {**op, "backend": op.get("backend", "cuda")}
        for op in ops
        if op["name"] != op_name and op["kind"] == me["kind"] and len(op["inputs"]) == len(me["inputs"])
        and len(op.get("weights") or []) == len(me.get("weights") or []) and _shape(op) == shape
    ]


def answers_yaml(answers: dict[str, Any]) -> str:
    data = {"_kernelgen_version": __version__, "_template_version": TEMPLATE_VERSION}
    data.update({key: answers[key] for key in _RECORDED})
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1000)


@pass_context
def label(context: Any, ident: str) -> str:
    """The user's name of an input or weight identifier: what messages, docstrings, the public
    signature and the schema show (``out`` where the code says ``out_arg``)."""
    return (context.get("names") or {}).get(ident, ident)


class KernelgenExtension(Extension):
    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.globals["kg_expression"] = expression
        environment.globals["kg_twins"] = twins
        environment.globals["kg_rowwise"] = rowwise
        environment.globals["kg_error_bound"] = error_bound
        environment.globals["kg_backward"] = backward
        environment.globals["kg_gradient_error_bound"] = gradient_error_bound
        environment.globals["kg_rowwise_backward"] = rowwise_backward
        environment.globals["kg_epilogue_backward"] = epilogue_backward
        environment.globals["kg_rowwise_backward_python"] = rowwise_backward_python
        environment.globals["kg_rowwise_gradient_error_bound"] = rowwise_gradient_error_bound
        environment.globals["kg_function_ulps"] = {"float": ulps_literal("float"), "double": ulps_literal("double")}
        environment.globals["kg_dtype"] = DTYPE_INFO
        environment.globals["kg_version"] = __version__
        environment.globals["kg_template_version"] = TEMPLATE_VERSION
        environment.filters["kg_answers_yaml"] = answers_yaml
        environment.filters["label"] = label
