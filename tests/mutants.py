"""The mutation check of the generated tests (issue 25): small, plausible bugs planted in a generated
op, each of which the op's own generated tests must catch.

One table serves two runs. kernelgen's test suite (tests/test_error_model.py) builds the C++ ops of
:data:`OPS` CPU-only and plants every mutant whose ``where`` is ``formula`` (the header the CPU loop
and the CUDA kernel share) or ``cpu``; docs/device/error_model.py plants the ``formula``, ``cuda`` and
``triton`` ones on a GPU machine and runs the CUDA tests only. A mutant is a list of textual edits of
the generated files; each edit must find its text exactly as often as it says, so a template change
that moves the text fails loudly here instead of planting nothing.

The ops are chosen so that every mutant has something to break: the elementwise op is the issue's
polynomial with cancellation (a 1% change of its 0.01 is 1e-4 |c|, a few times its float32 bound),
the rowwise op a LayerNorm with two weights and a term, the matmul op a bias + GELU epilogue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "kgmut"
EW_EXPR = "(a + 8) * (b + 8) - 8 * (a + b) - 64 + 0.01 * c"
RW_EXPR = "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + 0.5 * b"
MM_EPILOGUE = "(acc + bias) * sigmoid(1.702 * (acc + bias))"

#: The mutated ops: name -> (kind, backend, the `kernelgen new/add` options that make it).
OPS: dict[str, tuple[str, str, list[str]]] = {
    "ew": ("elementwise", "cuda", ["--inputs", "a,b,c", "--expr", EW_EXPR]),
    "rw": ("rowwise", "cuda", ["--kind", "rowwise", "--inputs", "x", "--weights", "w,b", "--expr", RW_EXPR]),
    "mm": ("matmul", "cuda", ["--kind", "matmul", "--bias", "--epilogue", MM_EPILOGUE]),
    "ew_tl": ("elementwise", "triton", ["--backend", "triton", "--inputs", "a,b,c", "--expr", EW_EXPR]),
    "rw_tl": ("rowwise", "triton", ["--kind", "rowwise", "--backend", "triton", "--inputs", "x", "--weights", "w,b",
                                    "--expr", RW_EXPR]),
}


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new`` in ``path`` (relative to the package root, ``{pkg}`` for the Python
    package): in every one of its ``count`` occurrences (each anchored on text that marks the place
    meant, so that a template change that adds an occurrence stops the mutant instead of moving it)."""

    path: str
    old: str
    new: str
    count: int = 1


@dataclass(frozen=True)
class Mutant:
    """A bug planted in op ``op``: ``what`` in the issue's words; ``where`` it lives: ``formula`` (the
    header shared by the CPU loop and the CUDA kernel), ``cpu``, ``cuda`` or ``triton``."""

    id: str
    op: str
    where: str
    what: str
    edits: tuple[Edit, ...]


def _e(path: str, old: str, new: str, count: int = 1) -> Edit:
    return Edit(path, old, new, count)


EW_H = "{pkg}/csrc/ew/ew.h"
#: The package's elementwise CPU loops, which every elementwise C++ op runs with its formula.
EW_CPU = "{pkg}/csrc/kernelgen/elementwise_cpu_op.h"
#: The package's elementwise kernel and launch, which every elementwise CUDA op instantiates.
EW_CUH = "{pkg}/csrc/kernelgen/elementwise.cuh"
RW_H = "{pkg}/csrc/rw/rw.h"
#: The package's rowwise CPU loop, which every rowwise C++ op runs with its steps.
RW_CPU = "{pkg}/csrc/kernelgen/rowwise_cpu.h"
#: The package's rowwise kernels and launch, which every rowwise CUDA op instantiates with its steps.
RW_CUH = "{pkg}/csrc/kernelgen/rowwise.cuh"
MM_H = "{pkg}/csrc/mm/mm_problem.h"
MM_CPP = "{pkg}/csrc/mm/mm.cpp"
#: The package's matrix-product kernels, which every matmul op instantiates with its epilogue.
MM_CUH = "{pkg}/csrc/kernelgen/gemm.cuh"
EW_TL = "{pkg}/ops/ew_tl.py"
RW_TL = "{pkg}/ops/rw_tl.py"
#: The package's shared Triton rowwise backward machinery (the column sum of the weights' gradients).
RW_TL_SHARED = "{pkg}/_triton_rowwise.py"


MUTANTS: tuple[Mutant, ...] = (
    # ---- elementwise, CUDA C++ backend ----
    Mutant("ew-operator", "ew", "formula", "an operator swapped (a + 8 becomes a - 8)",
           (_e(EW_H, "return (a + acc_t(8.0))", "return (a - acc_t(8.0))"),)),
    Mutant("ew-term", "ew", "formula", "a term dropped (+ 0.01 * c)",
           (_e(EW_H, " + acc_t(0.01) * c;", ";"),)),
    Mutant("ew-constant", "ew", "formula", "a constant off by 1% (0.01 becomes 0.0101)",
           (_e(EW_H, " + acc_t(0.01) * c;", " + acc_t(0.0101) * c;"),)),
    Mutant("ew-last-element", "ew", "cpu", "the last element skipped (CPU loop)",
           (_e(EW_CPU, "for (int64_t i = begin; i < end; ++i) {\n        out[i] =",
               "for (int64_t i = begin; i < (end == n ? n - 1 : end); ++i) {\n        out[i] ="),)),
    Mutant("ew-tail", "ew", "cuda", "the tail skipped (the last element after the whole packs)",
           (_e(EW_CUH, "if (blockIdx.x == 0 && i < n) {\n    out[i] =", "if (blockIdx.x == 0 && i < n - 1) {\n    out[i] ="),)),
    Mutant("ew-last-pack", "ew", "cuda", "the last pack skipped",
           (_e(EW_CUH, "    if (p < n_packs) {\n      pack_t result;", "    if (p < n_packs - 1) {\n      pack_t result;"),)),
    # the generated backward (ew_grad in ew.h, which its CPU loop and CUDA kernel share; the grad kernel)
    Mutant("ew-grad-constant", "ew", "formula", "a constant of a gradient off by 1% (dc = 0.01 * grad becomes 0.0101 * grad)",
           (_e(EW_H, "_d[2] = acc_t(0.01) * _grad;", "_d[2] = acc_t(0.0101) * _grad;"),)),
    Mutant("ew-grad-input", "ew", "formula", "a gradient reads the wrong input (da = grad * b becomes grad * a)",
           (_e(EW_H, "_d[0] = _grad * b;", "_d[0] = _grad * a;"),)),
    Mutant("ew-grad-tail", "ew", "cuda", "the backward's tail skipped (the last element after the whole packs)",
           (_e(EW_CUH, "  if (blockIdx.x == 0 && i < n) {\n    acc_t di[kInputs];",
               "  if (blockIdx.x == 0 && i < n - 1) {\n    acc_t di[kInputs];"),)),
    # ---- rowwise, CUDA C++ backend ----
    Mutant("rw-operator", "rw", "formula", "an operator swapped (x - mean(x) becomes x + mean(x) in the output)",
           (_e(RW_H, "return (x - _r[0]) *", "return (x + _r[0]) *"),)),
    Mutant("rw-term", "rw", "formula", "a term dropped (+ 0.5 * b)",
           (_e(RW_H, " + acc_t(0.5) * b;", ";"),)),
    Mutant("rw-constant", "rw", "formula", "a constant off by 1% (0.5 becomes 0.505)",
           (_e(RW_H, "acc_t(0.5) * b", "acc_t(0.505) * b"),)),
    Mutant("rw-last-element", "rw", "cpu", "the last element of each row skipped (CPU loop)",
           (_e(RW_CPU, "      for (int64_t col = 0; col < cols; ++col) {\n        acc_t v",
               "      for (int64_t col = 0; col < cols - 1; ++col) {\n        acc_t v"),)),
    Mutant("rw-row-stride", "rw", "cpu", "the row stride off by one (CPU loop)",
           (_e(RW_CPU, "const int64_t base = row * cols;", "const int64_t base = row * (cols - 1);"),)),
    Mutant("rw-reduce-n-1", "rw", "cpu", "a reduction over N - 1 elements (mean(x), CPU loop)",
           (_e(RW_CPU, "    for (int64_t col = 0; col < cols; ++col) {\n      acc_t v",
               "    for (int64_t col = 0; col < cols - (S == 0); ++col) {\n      acc_t v"),)),
    Mutant("rw-weight-row", "rw", "cpu", "a weight indexed by the row (w[(row + col) % cols], CPU loop)",
           (_e(RW_CPU, "return static_cast<acc_t>(ptr[col]);", "return static_cast<acc_t>(ptr[(row + col) % cols]);"),)),
    Mutant("rw-grad-constant", "rw", "formula", "a weight's gradient off by 1% (db = 0.5 * grad becomes 0.505 * grad)",
           (_e(RW_H, "_d[2] = acc_t(0.5) * _grad;", "_d[2] = acc_t(0.505) * _grad;"),)),
    Mutant("rw-grad-term", "rw", "formula", "a backward reduction's term dropped from dx (- rstd * mean(g * w))",
           (_e(RW_H, " - _t0 * _r[1] - ", " - "),)),
    Mutant("rw-grad-last-task", "rw", "cpu", "a weight's gradient misses the last task's rows (CPU column sum)",
           (_e(RW_CPU, "    for (int64_t s = 0; s < slots; ++s) {", "    for (int64_t s = 0; s < slots - (slots > 1); ++s) {"),)),
    Mutant("rw-grad-last-slot-cuda", "rw", "cuda", "a weight's gradient misses the last row slot (column_sum_kernel)",
           (_e(RW_CUH, "for (int64_t s = threadIdx.y; s < slots; s += kSumThreadsY) {",
               "for (int64_t s = threadIdx.y; s + 1 < slots; s += kSumThreadsY) {"),)),
    Mutant("rw-last-element-cuda", "rw", "cuda", "the last pack of each row skipped",
           (_e(RW_CUH, "\n      *reinterpret_cast<pack_t*>(out + base + col) = result;",
               "\n      if (col + kVec < limit) *reinterpret_cast<pack_t*>(out + base + col) = result;"),)),
    Mutant("rw-row-stride-cuda", "rw", "cuda", "the row stride off by one",
           (_e(RW_CUH, "const int64_t base = row * cols;", "const int64_t base = row * (cols - 1);", 2),
            _e(RW_CUH, "const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;",
               "const int64_t base = static_cast<int64_t>(blockIdx.x) * (cols - 1);"))),
    Mutant("rw-reduce-n-1-cuda", "rw", "cuda", "a reduction over N - 1 elements (mean(x), rows held in registers)",
           (_e(RW_CUH, "          acc = Reduce::combine(acc, value);",
               "          if (S != 0 || col + k < limit - 1) acc = Reduce::combine(acc, value);"),)),
    Mutant("rw-weight-row-cuda", "rw", "cuda", "a weight indexed by the row (the output, rows held in registers)",
           (_e(RW_CUH, "Step::template load_weights<Step::kOutput>(weights, col, in...);",
               "Step::template load_weights<Step::kOutput>(weights, static_cast<int>((col + base / cols * kVec) % cols), in...);"),)),
    # ---- matmul with an epilogue, CUDA C++ backend ----
    Mutant("mm-operator", "mm", "formula", "an operator swapped (acc + bias becomes acc - bias, once)",
           (_e(MM_H, "return (acc + bias) *", "return (acc - bias) *"),)),
    Mutant("mm-term", "mm", "formula", "a term dropped (+ bias, once)",
           (_e(MM_H, "return (acc + bias) *", "return (acc) *"),)),
    Mutant("mm-constant", "mm", "formula", "a constant off by 1% (1.702 becomes 1.71902)",
           (_e(MM_H, "opmath::sigmoid(acc_t(1.702) * (acc + bias))", "opmath::sigmoid(acc_t(1.71902) * (acc + bias))"),)),
    Mutant("mm-last-element", "mm", "cpu", "the last column of each row skipped (CPU loop)",
           (_e(MM_CPP, "for (int64_t j = 0; j < p.n; ++j) {\n          c_row[j]", "for (int64_t j = 0; j < p.n - 1; ++j) {\n          c_row[j]"),)),
    Mutant("mm-row-stride", "mm", "cpu", "the row stride of A off by one (CPU loop)",
           (_e(MM_CPP, "a_ptr + row * p.k;", "a_ptr + row * (p.k - 1);"),)),
    Mutant("mm-reduce-k-1", "mm", "cpu", "a dot product over K - 1 elements (CPU loop)",
           (_e(MM_CPP, "for (int64_t kk = 0; kk < p.k; ++kk) {", "for (int64_t kk = 0; kk < p.k - 1; ++kk) {"),)),
    Mutant("mm-bias-row", "mm", "cpu", "the bias indexed by the row instead of the column (CPU loop)",
           (_e(MM_CPP, "mm_epilogue<acc_t>(acc[j], static_cast<acc_t>(bias_ptr[j]))",
               "mm_epilogue<acc_t>(acc[j], static_cast<acc_t>(bias_ptr[row % p.n]))"),)),
    Mutant("mm-epilogue-twice", "mm", "cpu", "the epilogue applied twice (CPU loop)",
           (_e(MM_CPP, "mm_epilogue<acc_t>(acc[j], static_cast<acc_t>(bias_ptr[j]))",
               "mm_epilogue<acc_t>(mm_epilogue<acc_t>(acc[j], static_cast<acc_t>(bias_ptr[j])), static_cast<acc_t>(bias_ptr[j]))"),)),
    Mutant("mm-grad-constant", "mm", "formula", "a constant of the epilogue's derivative off by 1% (1.702 becomes 1.71902 in dacc)",
           (_e(MM_H, "_grad * (_t1 + acc_t(1.702) * (_t0", "_grad * (_t1 + acc_t(1.71902) * (_t0"),)),
    Mutant("mm-grad-bias-last-task", "mm", "cpu", "the bias's gradient misses the last task's rows (CPU column sum)",
           (_e(MM_CPP, "for (int64_t task = 0; task < tasks; ++task) {\n          total +=",
               "for (int64_t task = 0; task < tasks - 1; ++task) {\n          total +="),)),
    Mutant("mm-grad-bias-column", "mm", "cpu", "the backward reads the bias of the wrong column (CPU loop)",
           (_e(MM_CPP, "static_cast<acc_t>(acc_ptr[i]), static_cast<acc_t>(bias_ptr[j]), d);",
               "static_cast<acc_t>(acc_ptr[i]), static_cast<acc_t>(bias_ptr[(j + 1) % n]), d);"),)),
    Mutant("mm-grad-last-slot-cuda", "mm", "cuda", "the bias's gradient misses the last row slot (column_sum_kernel)",
           (_e(MM_CUH, "for (int64_t s = 0; s < slots; ++s) {", "for (int64_t s = 0; s < slots - 1; ++s) {"),)),
    Mutant("mm-last-element-cuda", "mm", "cuda", "the last element of C skipped",
           (_e(MM_CUH, "if (gm < m && gn < n) {", "if (gm < m && gn < n && !(gm == m - 1 && gn == n - 1)) {", count=2),)),
    Mutant("mm-row-stride-cuda", "mm", "cuda", "the row stride of A off by one (float32/float64 kernel)",
           (_e(MM_CUH, "a[gm * k + gk]", "a[gm * (k - 1) + gk]"),)),
    Mutant("mm-reduce-k-1-cuda", "mm", "cuda", "a dot product over K - 1 elements (float32/float64 kernel)",
           (_e(MM_CUH, "as[kk][row] = (gm < m && gk < k) ?", "as[kk][row] = (gm < m && gk < k - 1) ?"),)),
    Mutant("mm-bias-row-cuda", "mm", "cuda", "the bias indexed by the row instead of the column",
           (_e(MM_CUH, "bias[gn]", "bias[gm % n]", count=2),)),
    Mutant("mm-epilogue-twice-cuda", "mm", "cuda", "the epilogue applied twice",
           (_e(MM_H, "return mm_epilogue<T>(acc, bias);", "return mm_epilogue<T>(mm_epilogue<T>(acc, bias), bias);"),)),
    # ---- elementwise, Triton backend (its CPU implementation is the reference: only the kernel) ----
    Mutant("ew_tl-operator", "ew_tl", "triton", "an operator swapped (a + 8 becomes a - 8)",
           (_e(EW_TL, "result = (a + tl.full((), 8.0, ACC))", "result = (a - tl.full((), 8.0, ACC))"),)),
    Mutant("ew_tl-term", "ew_tl", "triton", "a term dropped (+ 0.01 * c)",
           (_e(EW_TL, " + tl.full((), 0.01, ACC) * c\n", "\n"),)),
    Mutant("ew_tl-constant", "ew_tl", "triton", "a constant off by 1% (0.01 becomes 0.0101)",
           (_e(EW_TL, "+ tl.full((), 0.01, ACC) * c", "+ tl.full((), 0.0101, ACC) * c"),)),
    Mutant("ew_tl-last-element", "ew_tl", "triton", "the last element skipped (the mask)",
           (_e(EW_TL, "mask = offsets < n\n        a = tl.load(", "mask = offsets < n - 1\n        a = tl.load("),)),
    Mutant("ew_tl-grad-constant", "ew_tl", "triton", "a constant of a gradient off by 1% (the backward kernel's dc)",
           (_e(EW_TL, "_d2 = tl.full((), 0.01, ACC) * _grad", "_d2 = tl.full((), 0.0101, ACC) * _grad"),)),
    Mutant("ew_tl-grad-cpu-input", "ew_tl", "triton", "a gradient reads the wrong input (the backward's CPU implementation)",
           (_e(EW_TL, ".copy_(_grad * b))", ".copy_(_grad * a))"),)),
    # ---- rowwise, Triton backend ----
    Mutant("rw_tl-operator", "rw_tl", "triton", "an operator swapped (x - mean(x) becomes x + mean(x) in the output)",
           (_e(RW_TL, "result = (x - _r0) *", "result = (x + _r0) *", count=2),)),
    Mutant("rw_tl-term", "rw_tl", "triton", "a term dropped (+ 0.5 * b)",
           (_e(RW_TL, " + tl.full((), 0.5, ACC) * b\n", "\n", count=2),)),
    Mutant("rw_tl-constant", "rw_tl", "triton", "a constant off by 1% (0.5 becomes 0.505)",
           (_e(RW_TL, "tl.full((), 0.5, ACC) * b", "tl.full((), 0.505, ACC) * b", count=2),)),
    Mutant("rw_tl-last-element", "rw_tl", "triton", "the last element of each row skipped (the store's mask)",
           (_e(RW_TL, "result.to(out_ptr.dtype.element_ty), mask=mask", "result.to(out_ptr.dtype.element_ty), mask=mask & (offsets < cols - 1)",
               count=2),)),
    Mutant("rw_tl-row-stride", "rw_tl", "triton", "the row stride off by one",
           (_e(RW_TL, "base = tl.program_id(0).to(tl.int64) * cols", "base = tl.program_id(0).to(tl.int64) * (cols - 1)", count=2),)),
    Mutant("rw_tl-reduce-n-1", "rw_tl", "triton", "a reduction over N - 1 elements (mean(x), rows held in registers)",
           (_e(RW_TL, "_r0 = tl.sum(tl.where(mask, x, 0.0), axis=0)", "_r0 = tl.sum(tl.where(offsets < cols - 1, x, 0.0), axis=0)"),)),
    Mutant("rw_tl-weight-row", "rw_tl", "triton", "a weight indexed by the row (w[(col + row) % cols])",
           (  # the forward's two kernels (the backward's load the weights too)
               _e(RW_TL, "w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)\n        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)\n        result", "w = tl.load(w_ptr + (offsets + tl.program_id(0)) % cols, mask=mask, other=0.0).to(ACC)\n        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)\n        result"),
               _e(RW_TL, "w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)\n            b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)\n            result", "w = tl.load(w_ptr + (offsets + tl.program_id(0)) % cols, mask=mask, other=0.0).to(ACC)\n            b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)\n            result"),
           )),
    Mutant("rw_tl-grad-term", "rw_tl", "triton", "a backward reduction's term dropped from dx (the row's math, which the row and rows kernels share)",
           (_e(RW_TL, "_d0 = _grad * (_t0 * w) - _t0 * _r2 - ", "_d0 = _grad * (_t0 * w) - "),)),
    Mutant("rw_tl-grad-long-term", "rw_tl", "triton", "a backward reduction's term dropped from dx (the weights' kernel, long rows)",
           (_e(RW_TL, "tl.store(_d0_ptr + offsets, (_grad * (_t0 * w) - _t0 * _r2 - ", "tl.store(_d0_ptr + offsets, (_grad * (_t0 * w) - "),)),
    Mutant("rw_tl-grad-weight-constant", "rw_tl", "triton", "a weight's gradient off by 1% (the weights' kernel: db = 0.505 * grad)",
           (_e(RW_TL, "_s1 += tl.where(mask, tl.full((), 0.5, ACC) * _grad, 0.0)\n",
               "_s1 += tl.where(mask, tl.full((), 0.505, ACC) * _grad, 0.0)\n"),)),
    Mutant("rw_tl-grad-tile-rows", "rw_tl", "triton", "the weights' kernel skips the last row of each split",
           (_e(RW_TL, "row_mask = tile_rows < last", "row_mask = tile_rows < last - 1"),)),
    Mutant("rw_tl-grad-last-split", "rw_tl", "triton", "a weight's gradient misses the last row of partial sums (the column sum)",
           (_e(RW_TL_SHARED, "mask = (part < parts)[:, None]", "mask = (part < parts - 1)[:, None]"),)),
    Mutant("rw_tl-grad-rows-weight-constant", "rw_tl", "triton", "a weight's gradient off by 1% (the rows kernel, summed on chip)",
           (_e(RW_TL, "_dw1 = tl.full((), 0.5, ACC) * _grad  # d/db", "_dw1 = tl.full((), 0.505, ACC) * _grad  # d/db"),)),
    Mutant("rw_tl-grad-rows-next", "rw_tl", "triton", "the rows kernel's loads of a program's next row stop a row early",
           (_e(RW_TL, "_more = mask & (row + tl.num_programs(0) < rows)", "_more = mask & (row + tl.num_programs(0) < rows - 1)"),)),
    Mutant("rw_tl-grad-cpu-rows", "rw_tl", "triton", "a weight's gradient misses the last row (the backward's CPU implementation)",
           (_e(RW_TL, "torch.broadcast_to(0.5 * _grad, (rows, cols)).sum(0)", "torch.broadcast_to(0.5 * _grad, (rows, cols))[:-1].sum(0)"),)),
)


class MutantDoesNotApply(AssertionError):
    """An edit's text is not in the generated file as often as the table says: the templates moved on."""


def apply(root: Path, mutant: Mutant, package: str = PACKAGE) -> list[Path]:
    """Plants ``mutant`` in the generated package at ``root``; returns the files it changed."""
    changed = []
    for edit in mutant.edits:
        path = root / edit.path.format(pkg=package)
        text = path.read_text()
        found = text.count(edit.old)
        if found != edit.count:
            raise MutantDoesNotApply(f"{mutant.id}: {edit.path} has {found} occurrences of {edit.old!r}, expected {edit.count}")
        path.write_text(text.replace(edit.old, edit.new))
        changed.append(path)
    return changed


#: The formula evaluated in double, in a CUDA C++ op's CPU loop and kernels: a correct kernel with
#: other rounding (a more accurate one), which the generated tests must pass as they pass the op itself.
_ACC_T = re.compile(r"using (acc_t|math_t) = [^;]*;")
#: The formula as the package's kernels call it, which keep their own math types: an elementwise op's
#: Op::apply (csrc/<op>/cuda/<op>_kernel.cu) and a matmul op's Op::epilogue (csrc/<op>/<op>_problem.h).
_EW_APPLY = re.compile(r"return (\w+_expr)<acc_t>\(([^;]*)\);")
_MM_EPILOGUE = re.compile(r"return (\w+_epilogue)<T>\(([^;]*)\);")


def _in_double(pattern: re.Pattern[str], kind: str, text: str) -> str:
    """``return f<T>(args);`` -> ``return static_cast<T>(f<double>(static_cast<double>(arg), ...));``"""
    return pattern.sub(lambda m: f"return static_cast<{kind}>({m.group(1)}<double>("
                       + ", ".join(f"static_cast<double>({a.strip()})" for a in m.group(2).split(",")) + "));", text)


def formula_in_double(op_dir: Path) -> list[Path]:
    """Rewrites the C++ of one op (``csrc/<op>/``) to evaluate its formula in double and round once:
    every ``using acc_t = ...;`` of its CPU loop becomes double, a rowwise op's ``Op::math_t`` (its kernels'
    math and reductions) becomes double, and the formula the package's elementwise and matmul kernels call
    (Op::apply, Op::epilogue) computes in double. Returns the files it changed (none for a Triton op:
    see :func:`triton_in_double`)."""
    changed = []
    for path in sorted(op_dir.rglob("*")):
        if path.suffix not in (".cpp", ".cu", ".h"):
            continue
        text = path.read_text()
        new = _ACC_T.sub(r"using \1 = double;", text)
        if path.name.endswith("_kernel.cu"):
            new = _in_double(_EW_APPLY, "acc_t", new)
        if path.name.endswith("_problem.h"):
            new = _in_double(_MM_EPILOGUE, "T", new)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def triton_in_double(ops_file: Path) -> bool:
    """The same for a Triton op (``ops/<op>.py``): its kernels compute in float64 for every dtype."""
    text = ops_file.read_text()
    old = "acc = tl.float64 if out.dtype == torch.float64 else tl.float32"
    if old not in text:
        return False
    ops_file.write_text(text.replace(old, "acc = tl.float64"))
    return True
