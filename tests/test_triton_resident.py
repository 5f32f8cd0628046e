"""The Triton rowwise launches read how many programs of a kernel the GPU holds, and what it spills, from the compiled
kernel (_triton_rowwise.resident): the forward's warps at its longest rows (rows_warps) and the backward's register
kernels (backward_fit). Where Triton does not report that, both must still run."""

from __future__ import annotations

import contextlib
import importlib
import sys

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="the generated package runs on torch")


def _shared(tmp_path):
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    result = CliRunner().invoke(main, ["new", "held-ops", "--op", "norm", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x", "--weights", "w", "--expr", "x * w - mean(x * w)", "--defaults",
                                       "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(tmp_path / "held-ops"))
    try:
        return importlib.import_module("held_ops._triton_rowwise")
    finally:
        sys.path.remove(str(tmp_path / "held-ops"))


def _counts(monkeypatch, shared, at_16, spills_at_32):
    """Stands in for the compiled kernel's counts: resident() answers at_16 (programs held, bytes spilled) at 16
    warps and (66, spills_at_32) at 32. Returns the list of the warps it was asked about, in order."""
    asked = []

    def resident(kernel, args, options, device):
        asked.append(options["num_warps"])
        return at_16 if options["num_warps"] == 16 else (66, spills_at_32)

    monkeypatch.setattr(shared, "resident", resident)
    return asked


@pytest.mark.parametrize("at_16, spills_at_32, warps", [
    ((264, 0), 0, 16),   # two programs an SM at 16 warps: they hide each other's latency, 16 stay
    ((132, 0), 0, 32),   # one program an SM, and 32 warps do not spill: 32
    ((132, 0), 24, 16),  # one program an SM, but 32 warps spill past the tolerance: 16 stay
    ((132, 0), 16, 32),  # 32 warps spill within the tolerance (FORWARD_SPILL_TOLERATED): 32
    ((132, 16), 24, 16),  # 16 warps spill within the tolerance, 32 past it: 16 stay
    ((132, 24), 24, None),  # both spill past the tolerance: the long kernel (None)
    ((0, 1), 1, 16),     # a Triton that does not report registers (resident's answer): 16 stay
])
def test_the_forward_takes_32_warps_only_where_16_leave_one_program_an_sm_and_32_spill_little(
        tmp_path, monkeypatch, at_16, spills_at_32, warps):
    shared = _shared(tmp_path)
    asked = _counts(monkeypatch, shared, at_16, spills_at_32)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    options = {"BLOCK": 16384, "ACC": None, "num_warps": 16}
    assert shared.rows_warps(object(), [torch.bfloat16, torch.bfloat16, 16384], options, torch.device("cuda", 0), 32) == warps
    assert options["num_warps"] == 16  # the caller's options are not changed
    assert asked[0] == 16 and (len(asked) == 1) == (at_16[0] > 132 or at_16[0] == 0)


@pytest.mark.parametrize("spills, warps", [(0, 32), (104, 32), (256, 32), (260, None)])
def test_a_float32_row_starting_at_32_warps_takes_the_long_kernel_where_they_spill(tmp_path, monkeypatch, spills, warps):
    # float32 rows of 16384 start at 32 warps (16 elements a thread): one count, at 32 warps, decides between them and
    # the long kernel, past WIDE_SPILL_TOLERATED (seed 84's r07_tl spilled 404 bytes a thread there and ran its forward
    # at about 16% of a copy).
    shared = _shared(tmp_path)
    asked = _counts(monkeypatch, shared, (132, 0), spills)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    options = {"BLOCK": 16384, "ACC": None, "num_warps": 32}
    assert shared.rows_warps(object(), [torch.float32, torch.float32, 16384], options, torch.device("cuda", 0), 32) == warps
    assert asked == [32]


def test_a_triton_that_does_not_report_registers_takes_the_second_pass(tmp_path):
    # _triton_rowwise.resident reads a compiled kernel's registers and spills through a call Triton does not
    # document (CompiledKernel._init_handles). Without it, the backward of an op with weights must still run:
    # resident answers "spills" (the launch then takes the two passes), once, with a warning.
    shared = _shared(tmp_path)

    class Compiled:  # a compiled kernel of a Triton that keeps its counts elsewhere
        pass

    class Kernel:
        __name__ = "_norm_backward_rows_kernel"
        calls = 0

        def warmup(self, *args, **options):
            Kernel.calls += 1
            return Compiled()

    kernel = Kernel()
    with pytest.warns(UserWarning, match="does not report a compiled kernel's registers and spills"):
        assert shared.resident(kernel, [torch.float32, 16], {"BLOCK": 1024, "num_warps": 4}, torch.device("cuda", 0)) == (0, 1)
    assert shared.resident(kernel, [torch.float32, 16], {"BLOCK": 1024, "num_warps": 4}, torch.device("cuda", 0)) == (0, 1)
    assert Kernel.calls == 1  # compiled once, the answer kept


def _fit_counts(monkeypatch, shared, narrow, wide):
    """Stands in for the compiled kernel's counts: resident() answers narrow (programs held, bytes spilled a thread)
    at the launch's warps and wide at twice them. Returns the list of the warps it was asked about, in order."""
    asked = []

    def resident(kernel, args, options, device):
        asked.append(options["num_warps"])
        return narrow if len(asked) == 1 else wide

    monkeypatch.setattr(shared, "resident", resident)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    return asked


@pytest.mark.parametrize("block, warps, prefetches, narrow, wide, fit", [
    # the kernel of one program a row (no prefetch)
    (4096, 8, False, (264, 0), None, (8, 264)),         # two programs an SM and no spill: the warps stay
    (4096, 8, False, (132, 0), (132, 0), (16, 132)),    # one program fills an SM: twice the warps
    (4096, 8, False, (132, 8), (132, 120), (8, 132)),   # ... unless they spill more than tolerated
    (1024, 4, False, (528, 8), None, (4, 528)),         # a spill within the tolerance: the warps stay
    (4096, 8, False, (264, 200), (132, 40), (16, 132)),  # spills: twice the warps, within the tolerance
    (4096, 8, False, (264, 200), (132, 100), None),     # spills at both: the next kernel
    (16384, 16, False, (264, 324), (264, 182), None),   # seed 65's r03_tl bfloat16 on the H200: the long kernel
    (16384, 32, False, (132, 100), None, None),         # 32 warps at most: nothing wider to try
    # the rows kernel (it prefetches its next row)
    (4096, 8, True, (132, 0), None, (8, 132)),          # no spill: the prefetch hides the latency, the warps stay
    (4096, 8, True, (132, 8), (132, 8), (16, 132)),     # a spill: twice the warps
    (4096, 8, True, (264, 60), None, (8, 264)),         # two programs an SM, a spill within the tolerance: the warps stay
    (4096, 8, True, (132, 60), (132, 90), (8, 132)),    # within the tolerance, twice the warps are not: the warps stay
    (16384, 16, True, (132, 104), (132, 58), None),     # rmsnorm_tl bfloat16 on the H200: past 4096, 16 bytes at most
    (8192, 16, True, (132, 12), (132, 16), (32, 132)),  # layernorm_tl float32 at 8192: within 16 bytes
    # unknown counts (a Triton that does not report them): the warps, and no programs
    (4096, 8, True, (0, 1), None, (8, 0)),
    (4096, 8, False, (0, 1), None, (8, 0)),
])
def test_the_backward_register_kernels_fit(tmp_path, monkeypatch, block, warps, prefetches, narrow, wide, fit):
    shared = _shared(tmp_path)
    asked = _fit_counts(monkeypatch, shared, narrow, wide)
    options = {"BLOCK": block, "ACC": None, "num_warps": warps}
    assert shared.backward_fit(object(), [torch.bfloat16] * 3 + [1, block], options, torch.device("cuda", 0),
                               prefetches=prefetches) == fit
    assert options["num_warps"] == warps  # the caller's options are not changed
    assert asked == ([warps] if wide is None else [warps, 2 * warps])



class _Staged:
    """A kernel for backward_pipeline: its name, for the warning."""
    __name__ = "_norm_backward_kernel"


@pytest.mark.parametrize("rows, held, staged, answer, persistent", [
    (16384, 264, (264, 0), (16384, 1), False),   # two programs an SM: one program a row, nothing compiled staged
    (16384, 132, (132, 0), (132, 2), False),     # one program fills an SM: as many as the GPU holds, staged
    (16384, 132, (264, 8), (264, 2), False),     # the staged build holds more (fewer registers): as many as it holds
    (16384, 132, (132, 64), (132, 2), False),    # a spill within the tolerance (SPILL_TOLERATED)
    (16384, 132, (132, 100), (16384, 1), False),  # spills past it: one program a row
    (16384, 132, "OutOfResources", (16384, 1), False),  # its rows in shared memory do not fit an SM
    (16384, 132, (0, 1), (16384, 1), False),     # the counts unknown
    (100, 132, (132, 0), (100, 1), False),       # no more rows than programs: nothing to pipeline
    (16384, 0, None, (16384, 1), False),         # backward_fit's unknown counts: nothing compiled
    # a persistent kernel (the rows kernel, which holds its next row in registers): unstaged, as many programs as
    # the GPU holds at most the rows; staged only where its unstaged build spills (here 40 bytes)
    (16384, 264, (264, 0), (264, 1), True),
    (16384, 132, (132, 0), (132, 2), True),
    (16384, 132, (132, 100), (132, 1), True),
    (100, 132, (132, 0), (100, 1), True),
    (16384, 132, None, (132, 1), "no spill"),    # its unstaged build spills nothing: it keeps its register prefetch
])
def test_a_backward_kernel_pipelines_its_rows_where_one_program_fills_an_sm(
        tmp_path, monkeypatch, rows, held, staged, answer, persistent):
    shared = _shared(tmp_path)
    asked = []
    unstaged_spills = 0 if persistent == "no spill" else 40

    def resident(kernel, args, options, device):
        if "STAGES" not in options:  # the unstaged build backward_fit chose
            assert persistent, "only a persistent kernel's unstaged spills are asked"
            return held, unstaged_spills
        asked.append(options)
        if staged == "OutOfResources":
            raise shared.OutOfResources(300000, 232448, "shared memory")
        return staged

    monkeypatch.setattr(shared, "resident", resident)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    options = {"BLOCK": 4096, "ACC": None, "num_warps": 16}
    kernel = _Staged()
    for _ in range(2):  # the second call answers from the cache
        assert shared.backward_pipeline(kernel, [torch.bfloat16] * 3 + [1, 16, 4096], options, torch.device("cuda", 0),
                                        rows, held, persistent=bool(persistent)) == answer
    assert options == {"BLOCK": 4096, "ACC": None, "num_warps": 16}  # the caller's options are not changed
    compiled = held == 0 or held > 132 or staged is None
    assert asked == ([] if compiled else [{**options, "STAGES": shared.PIPELINE_STAGES}])


def test_a_staged_kernel_this_triton_cannot_build_runs_one_program_a_row_with_a_warning(tmp_path, monkeypatch):
    shared = _shared(tmp_path)

    def resident(kernel, args, options, device):
        raise RuntimeError("PassManager::run failed\nmore detail")

    monkeypatch.setattr(shared, "resident", resident)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    with pytest.warns(UserWarning, match=r"fails to build the kernel with STAGES=2 \(RuntimeError: PassManager::run failed\)"):
        assert shared.backward_pipeline(_Staged(), [torch.float32, 16, 4096], {"BLOCK": 4096, "num_warps": 16},
                                        torch.device("cuda", 0), 5000, 132) == (5000, 1)


@pytest.mark.parametrize("rows, cols", [(5000, "symbolic"), ("symbolic", 4096)])
def test_the_kernel_of_one_program_a_row_compiles_nothing_staged_for_symbolic_lengths(tmp_path, monkeypatch, rows, cols):
    shared = _shared(tmp_path)
    monkeypatch.setattr(shared, "resident", lambda *a: pytest.fail("compiled for a symbolic length"))
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)

    class Symbolic:  # stands in for a SymInt: not an int
        pass

    rows = Symbolic() if rows == "symbolic" else rows
    cols = Symbolic() if cols == "symbolic" else cols
    assert shared.backward_pipeline(_Staged(), [torch.float32, 16, cols], {"BLOCK": 4096, "num_warps": 16},
                                    torch.device("cuda", 0), rows, 132) == (rows, 1)

def test_the_backward_register_kernels_compile_nothing_for_a_symbolic_row_length(tmp_path, monkeypatch):
    # Under torch.compile's dynamic shapes the row length is a SymInt: no kernel can be compiled ahead.
    shared = _shared(tmp_path)

    def resident(kernel, args, options, device):
        raise AssertionError("compiled a kernel for a symbolic row length")

    monkeypatch.setattr(shared, "resident", resident)

    class Symbolic:  # stands in for a SymInt, which is not an int
        pass

    options = {"BLOCK": 1024, "num_warps": 8}
    assert shared.backward_fit(object(), [torch.float32, Symbolic()], options, torch.device("cuda", 0)) == (8, 0)


@pytest.mark.parametrize("held, spilled, tile", [
    (528, 0, "WEIGHT_TILE"),           # no spill, 4 programs an SM (WEIGHT_PROGRAMS_PER_SM): the wide tile
    (528, 16, "WEIGHT_TILE"),          # within the tolerance (WEIGHT_SPILL_TOLERATED): the wide tile
    (528, 32, "WEIGHT_TILE_NARROW"),   # past it: the narrow tile
    (396, 0, "WEIGHT_TILE_NARROW"),    # 3 programs an SM, too few to hide the loads' latency: the narrow tile
    (1056, 0, "WEIGHT_TILE"),          # 8 programs an SM
    (0, 1, "WEIGHT_TILE"),             # a Triton that does not report registers (resident's (0, 1)): the wide tile
])
def test_the_weights_kernel_narrows_its_tile_where_the_wide_one_spills_or_crowds(tmp_path, monkeypatch, held,
                                                                                 spilled, tile):
    shared = _shared(tmp_path)
    asked = []

    def resident(kernel, args, options, device):
        asked.append((args, options))
        return (held, spilled)

    monkeypatch.setattr(shared, "resident", resident)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    dtypes = [torch.bfloat16] * 3 + [torch.float32] * 2
    assert shared.WEIGHT_TILE_NARROW[0] < shared.WEIGHT_TILE[0]
    assert shared.weight_tile(object(), dtypes, 4096, 16384, None, torch.device("cuda", 0)) == getattr(shared, tile)
    # compiled once, at the wide tile, for the arguments the launch passes: the dtypes, rows, cols, rows per split
    (args, options), = asked
    tile_rows, tile_cols, _ = shared.WEIGHT_TILE
    assert args[:5] == dtypes and args[5:7] == [4096, 16384]
    assert args[7] == shared.splits(None, 4096, 16384 // tile_cols, tile_rows)[1]
    assert (options["BLOCK_R"], options["BLOCK_C"], options["num_warps"]) == shared.WEIGHT_TILE


def test_the_weights_kernel_compiles_nothing_for_a_symbolic_length(tmp_path, monkeypatch):
    shared = _shared(tmp_path)

    def resident(kernel, args, options, device):
        raise AssertionError("compiled a kernel for a symbolic length")

    monkeypatch.setattr(shared, "resident", resident)

    class Symbolic:  # stands in for a SymInt
        pass

    assert shared.weight_tile(object(), [torch.float32] * 4, Symbolic(), 16384, None, torch.device("cuda", 0)) == shared.WEIGHT_TILE


class _Recorder:
    """wrap() for a launch run on CPU tensors: records each kernel launched, its grid, arguments and options."""

    def __init__(self):
        self.launches = []

    def __call__(self, kernel):
        def grid(g):
            def launch(*args, **options):
                self.launches.append((kernel.__name__, g, args, options))
            return launch

        class Launchable:
            def __getitem__(self, g):
                return grid(g)
        return Launchable()


@pytest.fixture(scope="module")
def launch_ops(tmp_path_factory):
    """A Triton rowwise package of two ops, generated and imported once (an op is defined once a process): nrm
    with a weight, ctr without."""
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    out = tmp_path_factory.mktemp("launch")
    result = CliRunner().invoke(main, ["new", "launch-ops", "--op", "nrm", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x", "--weights", "w", "--expr", "x * w - mean(x * w)", "--defaults",
                                       "--output", str(out)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["add", "ctr", "--package", str(out / "launch-ops"), "--kind", "rowwise",
                                       "--backend", "triton", "--inputs", "x", "--expr", "x - mean(x)"])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(out / "launch-ops"))
    try:
        return {op: importlib.import_module(f"launch_ops.ops.{op}") for op in ("nrm", "ctr")}
    finally:
        sys.path.remove(str(out / "launch-ops"))


def _fresh_answers(monkeypatch, shared):
    """The launches' kept answers (_triton_rowwise._answer) emptied for this test, whose rules are replaced, on a GPU
    numbered 0 for the CPU tensors' launches."""
    monkeypatch.setattr(shared, "_ANSWERS", {})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


def _launch_on_cpu(monkeypatch, module):
    """The weights' launch helpers of ``module`` replaced for CPU tensors: one split, a tile of 16 x 64, a plain sum."""
    monkeypatch.setattr(module, "_splits", lambda device, rows, blocks, tile: (1, rows))
    monkeypatch.setattr(module, "_weight_tile", lambda kernel, dtypes, rows, cols, acc, device: (16, 64, 4))
    monkeypatch.setattr(module, "_column_sum", lambda partial, dtype, wrap: partial.sum(0).to(dtype))


@pytest.mark.parametrize("weights", [True, False], ids=["weights", "no_weights"])
@pytest.mark.parametrize("rows_fit, one_row", [(None, (32, 132)), (None, None), ((32, 132), None), ((16, 0), (32, 132)),
                                               (None, (16, 0))],
                         ids=["one_row_fits", "spills", "rows_kernel_fits", "counts_unknown", "one_row_counts_unknown"])
def test_the_backward_launch_takes_the_kernel_backward_fit_answers(launch_ops, monkeypatch, weights, rows_fit, one_row):
    # The launch's choice, run on CPU tensors with the kernels recorded instead of launched: the rows kernel (weights
    # only) where backward_fit answers it a fit with programs, at its warps and on as many programs; else the kernel
    # of one program a row at the warps backward_fit answers; else (None) the long kernel's passes.
    name = "nrm" if weights else "ctr"
    module = launch_ops[name]
    asked = []
    # the launch asks the package's rules (_triton_rowwise, through backward_launch): they are replaced there
    shared = importlib.import_module("launch_ops._triton_rowwise")
    _fresh_answers(monkeypatch, shared)

    def backward_fit(kernel, args, options, device, prefetches=False):
        asked.append((kernel, args, options, prefetches))
        return rows_fit if kernel.__name__.endswith("_rows_kernel") else one_row

    monkeypatch.setattr(shared, "backward_fit", backward_fit)
    pipelined = []

    def backward_pipeline(kernel, args, options, device, rows, held, persistent=False):
        pipelined.append((kernel, args, options, rows, held, persistent))
        return (2, 2) if held else (rows, 1)  # held: two programs, pipelining their rows

    monkeypatch.setattr(shared, "backward_pipeline", backward_pipeline)
    staged = []
    monkeypatch.setattr(shared, "backward_staged", lambda *args: staged.append(args))  # its staged build: refused
    if weights:
        _launch_on_cpu(monkeypatch, module)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    x = torch.randn(3, 16384)
    tensors = [torch.randn(3, 16384), x] + ([torch.randn(16384)] if weights else [])
    needs = [True] * (2 if weights else 1)
    wrap = _Recorder()
    grads = getattr(module, f"_{name}_backward_launch")(*tensors, needs, wrap)
    assert len(grads) == len(needs)
    launched = [kernel for kernel, *_ in wrap.launches]

    if weights:
        kernel, args, options, prefetches = asked.pop(0)
        assert kernel is module._nrm_backward_rows_kernel and prefetches
        names = [a for a in kernel.arg_names if a not in ("BLOCK", "ACC", "STAGES")]
        assert len(args) == len(names) and args[-1] == 16384 and options["BLOCK"] == 16384
        # the rows kernel's staged build is asked for only where backward_fit refuses its unstaged build
        assert [a[0] for a in staged] == ([kernel] if rows_fit is None else [])
        if rows_fit is not None and rows_fit[1] > 0:
            assert not asked and launched == ["_nrm_backward_rows_kernel", "_column_sum_kernel"][:1]
            # backward_pipeline's answer (persistent: the rows kernel), launched: the grid, STAGES, the warps
            assert pipelined == [(kernel, args, {**options, "num_warps": rows_fit[0]}, 3, rows_fit[1], True)]
            assert wrap.launches[0][1] == (2,) and wrap.launches[0][3]["STAGES"] == 2
            assert wrap.launches[0][3]["num_warps"] == rows_fit[0]
            return
    kernel, args, options, prefetches = asked[0]
    assert kernel is getattr(module, f"_{name}_backward_kernel") and not prefetches
    # the arguments compiled for are the kernel's, in order: a dtype per tensor (the per-row values in op math), the
    # flags, the row length
    names = [a for a in kernel.arg_names if a not in ("BLOCK", "ACC", "STAGES")]
    assert len(args) == len(names) and args[-2:] == [16, 16384]  # 16 rows stand in: they only bound the loop
    assert [a for a, n in zip(args, names, strict=True) if n == "_stats_ptr"] == ([torch.float32] if weights else [])
    assert options["BLOCK"] == 16384
    if one_row is None:
        assert launched[0] == f"_{name}_backward_long_kernel"
        assert {k: wrap.launches[0][3][k] for k in ("BLOCK", "num_warps", "KEEP", "STREAM")} == module._long_backward(x.dtype)
    else:
        assert launched[0] == f"_{name}_backward_kernel" and wrap.launches[0][3]["num_warps"] == one_row[0]
        # backward_pipeline is asked with the arguments backward_fit compiled for, at its warps, and its answer
        # launched: the grid, STAGES, and the rows the kernel loops over
        assert pipelined == [(kernel, args, {**options, "num_warps": one_row[0]}, 3, one_row[1], False)]
        grid, launch_args, launch_options = wrap.launches[0][1:]
        assert grid == ((2,) if one_row[1] else (3,)) and launch_options["STAGES"] == (2 if one_row[1] else 1)
        assert list(launch_args[-2:]) == [3, 16384]
    assert launched[1:] == ([f"_{name}_weight_grad_kernel"] if weights else [])
    if weights:
        # the weights' kernel's flags (dx, then dw): a long row's dx comes from it, a row in registers' from the
        # row's kernel
        assert list(wrap.launches[1][2][-5:-3]) == ([1, 1] if one_row is None else [0, 1])


def test_a_rows_kernel_that_spills_past_the_tolerance_runs_its_staged_build(launch_ops, monkeypatch):
    # backward_fit refuses the rows kernel's unstaged build (None): where backward_staged answers warps and programs,
    # the rows kernel runs staged on them (STAGES=PIPELINE_STAGES), and the weights' sums stay on chip (no weights'
    # kernel); the kernel of one program a row is never asked for.
    module = launch_ops["nrm"]
    shared = importlib.import_module("launch_ops._triton_rowwise")
    _fresh_answers(monkeypatch, shared)
    asked = []
    monkeypatch.setattr(shared, "backward_fit", lambda kernel, *args, **options: asked.append(kernel) and None)
    monkeypatch.setattr(shared, "backward_staged", lambda kernel, args, options, device, rows: (32, 2))
    _launch_on_cpu(monkeypatch, module)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    wrap = _Recorder()
    grads = module._nrm_backward_launch(torch.randn(3, 4096), torch.randn(3, 4096), torch.randn(4096), [True, True], wrap)
    assert len(grads) == 2
    assert asked == [module._nrm_backward_rows_kernel]
    (kernel, grid, _args, options), *rest = wrap.launches
    assert kernel == "_nrm_backward_rows_kernel" and grid == (2,)
    assert options["STAGES"] == shared.PIPELINE_STAGES and options["num_warps"] == 32
    assert [k for k, *_ in rest] == []  # the column sum is replaced on CPU; no weights' kernel


@pytest.mark.parametrize("held, wide, narrow, rows, block, answer", [
    (8, (132, 40), None, 16384, 4096, (16, 132)),        # twice the warps fits: taken, the narrow never compiled
    (8, (132, 100), (132, 40), 16384, 4096, (8, 132)),   # twice spills past SPILL_TOLERATED: options' warps
    (8, (132, 100), (132, 100), 16384, 4096, None),      # both spill past it: the kernel of one program a row
    (8, (0, 0), (132, 0), 16384, 4096, (8, 132)),        # twice does not build (OutOfResources, a failing Triton)
    (8, (132, 40), (132, 0), 100, 4096, None),           # no more rows than programs at either warps
    (16, (132, 20), (132, 30), 16384, 8192, None),       # rows longer than 4096: ROWS_SPILL_TOLERATED_LONG (16)...
    (16, (132, 20), (132, 8), 16384, 8192, (16, 132)),   # ... met at options' warps
    (32, (132, 0), None, 16384, 16384, (32, 132)),       # warps at 32 already: asked once
])
def test_the_rows_kernels_staged_build_where_its_unstaged_build_spills_past_the_tolerance(
        tmp_path, monkeypatch, held, wide, narrow, rows, block, answer):
    shared = _shared(tmp_path)
    counts = {held: narrow, min(32, 2 * held): wide}
    asked = []

    def staged(kernel, args, options, device):
        asked.append(options["num_warps"])
        return counts[options["num_warps"]]

    monkeypatch.setattr(shared, "_staged", staged)
    options = {"BLOCK": block, "ACC": None, "num_warps": held}
    assert shared.backward_staged(_Staged(), [torch.bfloat16] * 3 + [1, 16, block], options, torch.device("cuda", 0),
                                  rows) == answer
    assert options["num_warps"] == held  # the caller's options are not changed
    order = list(dict.fromkeys((min(32, 2 * held), held)))  # twice the warps first, then options' warps
    assert asked == (order if answer is None else order[:order.index(answer[0]) + 1])


def test_the_rows_kernels_staged_build_is_not_asked_for_symbolic_lengths(tmp_path, monkeypatch):
    shared = _shared(tmp_path)
    monkeypatch.setattr(shared, "_staged", lambda *args: pytest.fail("nothing is compiled for a symbolic length"))

    class Symbolic:
        pass

    options = {"BLOCK": 4096, "ACC": None, "num_warps": 8}
    assert shared.backward_staged(_Staged(), [torch.float32, 16, Symbolic()], options, torch.device("cuda", 0), 100) is None
    assert shared.backward_staged(_Staged(), [torch.float32, 16, 4096], options, torch.device("cuda", 0), Symbolic()) is None


@pytest.mark.parametrize("needs, flags", [([True, False], [1, 0]), ([False, True], [0, 1])])
def test_a_long_rows_gradients_come_from_the_weights_kernel_whatever_is_asked(launch_ops, monkeypatch, needs, flags):
    # Long rows of an op with weights: the long kernel writes the per-row values only, and the weights' kernel every
    # gradient asked for, so dx is computed by the same kernel, with the same bits, whether dw is asked for or not.
    module = launch_ops["nrm"]
    _launch_on_cpu(monkeypatch, module)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    wrap = _Recorder()
    grads = module._nrm_backward_launch(torch.randn(3, 65536), torch.randn(3, 65536), torch.randn(65536), needs, wrap)
    assert len(grads) == 1
    assert [kernel for kernel, *_ in wrap.launches] == ["_nrm_backward_long_kernel", "_nrm_weight_grad_kernel"]
    # the long kernel's arguments: the gradient, x, w, the per-row values, cols (no gradient, no flag)
    assert len(wrap.launches[0][2]) == 5 and wrap.launches[0][2][-1] == 65536
    assert list(wrap.launches[1][2][-5:-3]) == flags


def _asking_resident(monkeypatch, shared, answer):
    """resident() answering ``answer`` (programs held, bytes spilled) for every build, on a GPU of 132 SMs; returns
    the list of the options it was asked about."""
    asked = []

    def resident(kernel, args, options, device):
        asked.append(dict(options))
        return answer

    monkeypatch.setattr(shared, "resident", resident)
    monkeypatch.setattr(shared, "_sm_count", lambda device: 132)
    monkeypatch.setattr(shared, "_staged", lambda kernel, args, options, device: answer)
    _fresh_answers(monkeypatch, shared)
    return asked


@pytest.mark.parametrize("answer", [(264, 0), (132, 100)], ids=["fits", "spills"])
def test_the_launch_keeps_its_answers_and_asks_no_build_twice(tmp_path, monkeypatch, answer):
    # backward_launch and weight_tile answer a call seen before from what they kept: the same answer, and no build
    # of the kernel asked about again (each question costs the host a key of 15-25 arguments made into strings).
    shared = _shared(tmp_path)
    asked = _asking_resident(monkeypatch, shared, answer)
    kernel, device = _Staged(), torch.device("cuda", 0)
    args, options = [torch.bfloat16] * 6 + [1, 16, 4096], {"BLOCK": 4096, "ACC": None, "num_warps": 8}
    first = shared.backward_launch(kernel, args, options, device, 16384, rows_kernel=True)
    builds = len(asked)
    assert builds > 0
    assert shared.backward_launch(kernel, args, options, device, 16384, rows_kernel=True) == first
    assert len(asked) == builds
    # another row count, another kernel, other options: each asked for once, then kept
    for call in [(kernel, args, options, device, 100), (_Staged(), args, options, device, 16384),
                 (kernel, args, {**options, "num_warps": 16}, device, 16384)]:
        fresh = shared.backward_launch(*call, rows_kernel=True)
        assert len(asked) > builds
        builds = len(asked)
        assert shared.backward_launch(*call, rows_kernel=True) == fresh and len(asked) == builds
    tile = shared.weight_tile(kernel, [torch.float32] * 4, 4096, 16384, None, device)
    builds = len(asked)
    assert shared.weight_tile(kernel, [torch.float32] * 4, 4096, 16384, None, device) == tile and len(asked) == builds
    # an answer kept is the answer computed: the same calls with nothing kept
    monkeypatch.setattr(shared, "_ANSWERS", {})
    assert shared.backward_launch(kernel, args, options, device, 16384, rows_kernel=True) == first
    assert shared.weight_tile(kernel, [torch.float32] * 4, 4096, 16384, None, device) == tile


def test_the_launch_keeps_no_answer_for_a_symbolic_length_and_at_most_answers_kept(tmp_path, monkeypatch):
    shared = _shared(tmp_path)
    asked = _asking_resident(monkeypatch, shared, (264, 0))
    kernel, device = _Staged(), torch.device("cuda", 0)
    options = {"BLOCK": 4096, "ACC": None, "num_warps": 8}

    class Symbolic:  # torch.compile's dynamic shapes: a length that is a symbol (and not hashable)
        __hash__ = None

    assert shared.backward_launch(kernel, [torch.float32, 16, Symbolic()], options, device, 100) == (8, 100, 1)
    assert shared.backward_launch(kernel, [torch.float32, 16, 4096], options, device, Symbolic())[0] == 8
    assert shared.weight_tile(kernel, [torch.float32], Symbolic(), 4096, None, device) == shared.WEIGHT_TILE
    assert shared._ANSWERS == {}
    monkeypatch.setattr(shared, "ANSWERS_KEPT", 3)
    for rows in range(100, 105):
        shared.backward_launch(kernel, [torch.float32, 16, 4096], options, device, rows)
    assert [key[-2] for key in shared._ANSWERS] == [102, 103, 104]  # the oldest dropped first
    builds = len(asked)
    shared.backward_launch(kernel, [torch.float32, 16, 4096], options, device, 100)  # dropped: asked again
    assert len(asked) > builds
