"""kernelgen update: the user's edits and the template's changes both survive; conflicts are loud."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, failing_replace, tree

import kernelgen.paths as paths
import kernelgen.record as record
from kernelgen._jinja import TEMPLATE_VERSION
from kernelgen.cli import main

USER_EDIT = ("  return a * b + c;\n", "  return a * b + c * acc_t(2);  // my edit\n")
HEADER = "{{package}}/csrc/{{op_name}}/{{op_name}}.h.jinja"


@pytest.fixture
def op(tmp_path):
    result = CliRunner().invoke(main, ["new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return tmp_path / "muladd"


@pytest.fixture
def new_templates(tmp_path, monkeypatch):
    """A copy of the templates that the test may change; kernelgen renders from it."""
    copy = tmp_path / "templates-v2"
    shutil.copytree(REPO / "templates", copy)
    monkeypatch.setattr(paths, "template_dir", lambda: copy)
    return copy


def recorded(op: Path) -> dict[str, bytes]:
    return record.decode_record((op / record.RECORD).read_bytes(), "record")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def update(*args):
    return CliRunner().invoke(main, ["update", *args], catch_exceptions=False)


def test_edit_and_template_change_both_survive(op, new_templates):
    header = op / "muladd/csrc/muladd/muladd.h"
    edit(header, *USER_EDIT)
    (op / "NOTES.md").write_text("my own file\n")
    edit(new_templates / "elementwise" / HEADER, "#pragma once\n", "#pragma once\n// Template v2: a new first comment.\n")
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")

    result = update(str(op))
    assert result.exit_code == 0, result.output
    assert "merged    muladd/csrc/muladd/muladd.h" in result.output
    assert "updated   README.md" in result.output
    text = header.read_text()
    assert "my edit" in text and "// Template v2: a new first comment." in text
    assert "## Build and test (v2)" in (op / "README.md").read_text()
    assert (op / "NOTES.md").read_text() == "my own file\n"
    # The ancestor now is the v2 output, so a second update is a no-op that keeps the edit.
    assert "// Template v2" in recorded(op)["muladd/csrc/muladd/muladd.h"].decode()
    again = update(str(op))
    assert again.exit_code == 0 and "is up to date" in again.output
    assert "my edit" in header.read_text()


def test_conflicting_edits_get_markers_and_exit_1(op, new_templates):
    header = op / "muladd/csrc/muladd/muladd.h"
    edit(header, *USER_EDIT)
    edit(new_templates / "elementwise" / HEADER, "  return {{ e.cpp }};", "  return ({{ e.cpp }});  // v2")
    result = update(str(op))
    assert result.exit_code == 1
    assert "conflict  muladd/csrc/muladd/muladd.h" in result.output
    assert "muladd/csrc/muladd/muladd.h" in result.output.splitlines()[-1]
    text = header.read_text()
    assert "<<<<<<< your edits" in text and ">>>>>>> kernelgen templates now" in text
    assert "my edit" in text and "(a * b + c);  // v2" in text


def test_dry_run_shows_diffs_and_writes_nothing(op, new_templates):
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    before = (op / "README.md").read_text()
    result = update(str(op), "--dry-run")
    assert result.exit_code == 0
    assert "updated   README.md" in result.output and "+## Build and test (v2)" in result.output
    assert (op / "README.md").read_text() == before


def test_untouched_op_takes_template_changes_and_removals(op, new_templates):
    (new_templates / "package/benchmarks/harness.py.jinja").unlink()
    result = update(str(op))
    assert result.exit_code == 0, result.output
    assert "removed   benchmarks/harness.py" in result.output
    assert not (op / "benchmarks/harness.py").exists()


def test_edited_file_the_templates_dropped_is_kept_and_reported(op, new_templates):
    # A template release that replaces a file (as v2 split <op>_cuda.cu in two) must not lose a
    # user's tuning in the old file silently: it stays, and the user is told it is no longer built.
    harness = op / "benchmarks/harness.py"
    harness.write_text(harness.read_text() + "# my tuning\n")
    (new_templates / "package/benchmarks/harness.py.jinja").unlink()
    result = CliRunner().invoke(main, ["update", str(op)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "orphaned  benchmarks/harness.py" in result.stdout
    assert "warning: 1 file(s) you edited are no longer built: benchmarks/harness.py" in result.stderr
    assert harness.read_text().endswith("# my tuning\n")
    assert "benchmarks/harness.py" not in recorded(op)


def test_user_deleted_file_is_not_resurrected(op, new_templates):
    (op / "README.md").unlink()
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    result = update(str(op))
    assert result.exit_code == 0
    assert "skipped   README.md" in result.output and not (op / "README.md").exists()


def test_not_an_op_and_missing_base(tmp_path, op):
    result = CliRunner().invoke(main, ["update", str(tmp_path)])
    assert result.exit_code == 1 and "not found: is this a directory generated by kernelgen?" in result.output
    shutil.rmtree(op / ".kernelgen")
    result = CliRunner().invoke(main, ["update", str(op)])
    assert result.exit_code == 1 and "has no .kernelgen/generated.json.gz" in result.output
    assert "--rebuild-record" in result.output and "--force" not in result.output


@pytest.fixture
def legacy_op(tmp_path):
    """examples/muladd as template version 2 generated it: one op, csrc/ flat, ops.py, .kernelgen/base/."""
    import tarfile

    with tarfile.open(REPO / "tests/fixtures/muladd_template_v2.tar.gz") as archive:
        archive.extractall(tmp_path / "old", filter="data")
    return tmp_path / "old" / "examples" / "muladd"


def test_template_v2_op_moves_to_the_library_layout_with_its_edits(legacy_op):
    edit(legacy_op / "muladd/csrc/muladd.h", *USER_EDIT)
    edit(legacy_op / "muladd/ops.py", "    return a * b + c\n", "    return a * b + c * 2  # my edit\n")
    (legacy_op / "NOTES.md").write_text("mine\n")
    result = update(str(legacy_op))
    assert result.exit_code == 0, result.output
    assert "muladd/csrc/muladd/muladd.h" in result.output and "moved from muladd/csrc/muladd.h" in result.output
    assert "my edit" in (legacy_op / "muladd/csrc/muladd/muladd.h").read_text()
    ops = (legacy_op / "muladd/ops/muladd.py").read_text()
    assert "c * 2  # my edit" in ops and "csrc/muladd/muladd.h" in ops  # edit kept, template change taken
    assert "TORCH_LIBRARY_FRAGMENT(muladd, m)" in (legacy_op / "muladd/csrc/muladd/muladd.cpp").read_text()
    assert not (legacy_op / "muladd/ops.py").exists() and not (legacy_op / "muladd/csrc/muladd.cpp").exists()
    assert not (legacy_op / ".kernelgen/base").exists()  # replaced by the compact record
    assert (legacy_op / record.RECORD).is_file()
    assert (legacy_op / "NOTES.md").read_text() == "mine\n"
    answers = (legacy_op / ".copier-answers.yml").read_text()
    assert f"_template_version: '{TEMPLATE_VERSION}'" in answers
    assert "abi: full\n" in answers  # a package from before --abi keeps its ATen code
    assert "#include <ATen/core/Tensor.h>" in (legacy_op / "muladd/csrc/muladd/muladd_checks.h").read_text()
    assert not (legacy_op / "muladd/csrc/stable_utils.h").exists()
    again = update(str(legacy_op))
    assert again.exit_code == 0 and "is up to date" in again.output


@pytest.fixture
def v8_op(tmp_path):
    """`kernelgen new muladd --inputs a,b,c --expr "a*b+c"` as template version 8 generated it: the whole
    elementwise kernel and its launch in the op's own muladd_kernel.cu."""
    import tarfile

    with tarfile.open(REPO / "tests/fixtures/muladd_template_v8.tar.gz") as archive:
        archive.extractall(tmp_path / "old", filter="data")
    return tmp_path / "old" / "muladd"


def test_template_v8_op_takes_the_package_kernel_with_its_edits(v8_op):
    kernel = v8_op / "muladd/csrc/muladd/cuda/muladd_kernel.cu"
    assert "choose_packs" in kernel.read_text() and len(kernel.read_text().splitlines()) > 300
    edit(v8_op / "muladd/csrc/muladd/muladd.h", *USER_EDIT)
    edit(v8_op / "muladd/ops/muladd.py", "    return a * b + c\n", "    return a * b + c * 2  # my edit\n")
    result = update(str(v8_op))
    assert result.exit_code == 0, result.output
    # The formula and the reference keep the user's edits; the kernel file is now the op's part only,
    # and the machinery it instantiates is the package's header.
    assert "my edit" in (v8_op / "muladd/csrc/muladd/muladd.h").read_text()
    assert "c * 2  # my edit" in (v8_op / "muladd/ops/muladd.py").read_text()
    lean = kernel.read_text()
    assert "kg::elementwise::Launch<Op, scalar_t>::run(a, b, c, out, n, stream);" in lean
    assert "choose_packs" not in lean and len(lean.splitlines()) < 80  # the forward's and the backward's instantiations
    header = (v8_op / "muladd/csrc/kernelgen/elementwise.cuh").read_text()
    assert "static int choose_packs()" in header and "STD_CUDA_KERNEL_LAUNCH_CHECK();" in header
    assert f"_template_version: '{TEMPLATE_VERSION}'" in (v8_op / ".copier-answers.yml").read_text()
    assert recorded(v8_op)["muladd/csrc/kernelgen/elementwise.cuh"].decode() == header
    again = update(str(v8_op))
    assert again.exit_code == 0 and "is up to date" in again.output


@pytest.fixture
def v10_rowwise(tmp_path):
    """`kernelgen new rmsnorm --kind rowwise --inputs x --weights w --expr "x * rsqrt(mean(x * x) + 1e-6) * w"`
    as template version 10 generated it: the row kernels and their launch in the op's own rmsnorm_kernel.cu."""
    import tarfile

    with tarfile.open(REPO / "tests/fixtures/rmsnorm_template_v10.tar.gz") as archive:
        archive.extractall(tmp_path / "old", filter="data")
    return tmp_path / "old" / "rmsnorm"


#: A user's edits of a v10 rowwise op: the formula (its epsilon), the reference to match, and a test case.
V10_EDITS = (
    ("rmsnorm/csrc/rmsnorm/rmsnorm.h", "opmath::rsqrt(_r[0] + acc_t(1e-06))", "opmath::rsqrt(_r[0] + acc_t(1e-05))  /* my eps */"),
    ("rmsnorm/ops/rmsnorm.py", "1e-06", "1e-05"),
    ("tests/test_rmsnorm.py", "\n", "\n# my note: eps is 1e-5 in our models\n"),
)


def _edit_v10(root: Path) -> None:
    for rel, old, new in V10_EDITS:
        path = root / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1 if rel.startswith("tests/") else -1))


def test_template_v10_rowwise_op_takes_the_package_kernels_with_its_edits(v10_rowwise):
    root = v10_rowwise
    kernel = root / "rmsnorm/csrc/rmsnorm/cuda/rmsnorm_kernel.cu"
    assert "rmsnorm_long_rows_kernel" in kernel.read_text() and len(kernel.read_text().splitlines()) > 300
    _edit_v10(root)
    result = update(str(root))
    assert result.exit_code == 0, result.output
    # The user's formula, reference and test keep their edits; the kernel file is the op's steps, and the
    # kernels it instantiates are the package's header.
    assert "acc_t(1e-05))  /* my eps */" in (root / "rmsnorm/csrc/rmsnorm/rmsnorm.h").read_text()
    assert "1e-06" not in (root / "rmsnorm/ops/rmsnorm.py").read_text().split("def reference")[1].split("def ")[0]
    assert "# my note: eps is 1e-5" in (root / "tests/test_rmsnorm.py").read_text()
    lean = kernel.read_text()
    assert "kg::rowwise::Launch<Op, scalar_t>::run(x, w, out, rows, cols, stream);" in lean
    assert "long_rows_kernel" not in lean and len(lean.splitlines()) < 80
    header = (root / "rmsnorm/csrc/kernelgen/rowwise.cuh").read_text()
    assert "long_rows_kernel(" in header and "struct Launch<Op, scalar_t, std::index_sequence<I...>>" in header
    assert f"_template_version: '{TEMPLATE_VERSION}'" in (root / ".copier-answers.yml").read_text()
    again = update(str(root))
    assert again.exit_code == 0 and "is up to date" in again.output


def test_template_v10_benchmark_takes_the_shared_harness_with_its_edits(v10_rowwise):
    """A v10 bench_<op>.py built its cases and parsed its arguments itself; update makes it a declaration
    of what it races (template version 12) that the package's harness runs, and keeps the user's sizes."""
    import subprocess
    import sys

    root = v10_rowwise
    bench = root / "benchmarks/bench_rmsnorm.py"
    assert "def cases(" in bench.read_text() and len(bench.read_text().splitlines()) > 90
    edit(bench, "CPU_COLS = [1024, 16384]", "CPU_COLS = [512, 2048]  # our models")
    result = update(str(root))
    assert result.exit_code == 0, result.output
    lean = bench.read_text()
    assert "CPU_COLS = [512, 2048]  # our models" in lean and "cpu_cols=CPU_COLS" in lean
    assert "def cases(" not in lean and "harness.main_rowwise(" in lean and len(lean.splitlines()) < 60
    assert "def rowwise_cases(" in (root / "benchmarks/harness.py").read_text()
    helped = subprocess.run([sys.executable, str(bench), "--help"], cwd=root, capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "--cols" in helped.stdout, helped.stderr


@pytest.mark.build
def test_template_v10_rowwise_op_builds_and_passes_its_tests_after_update(v10_rowwise):
    """The updated package builds (CPU-only here; the header is the CUDA side, compiled in
    test_rowwise_registers and on the GPU machine) and its generated tests pass with the user's eps."""
    import os
    import subprocess
    import sys

    root = v10_rowwise
    _edit_v10(root)
    assert update(str(root)).exit_code == 0
    env = {key: value for key, value in os.environ.items() if key != "KERNELGEN_REQUIRE_CUDA"}
    built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, capture_output=True,
                           text=True, timeout=900, env={**env, "KERNELGEN_CPU_ONLY": "1"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:]


def test_update_never_writes_through_a_symlink(op, new_templates, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bench_muladd.py").write_text("not yours\n")
    import shutil as sh

    sh.rmtree(op / "benchmarks")
    (op / "benchmarks").symlink_to(outside)
    edit(new_templates / "_shared/bench_elementwise.py.jinja", '"""Benchmark', '"""v2: Benchmark')
    before = tree(op)
    result = CliRunner().invoke(main, ["update", str(op)])
    assert result.exit_code == 1 and "refusing to write through the symlink" in result.output
    assert (outside / "bench_muladd.py").read_text() == "not yours\n"
    assert tree(op) == before


def test_planted_temporary_name_is_not_followed(op, new_templates, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (op / ".README.md.kernelgen-tmp").symlink_to(victim)  # the predictable name older versions used
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    assert update(str(op)).exit_code == 0
    assert victim.read_text() == "precious\n"
    assert "(v2)" in (op / "README.md").read_text()


def test_new_force_refuses_a_symlinked_directory(tmp_path):
    args = ["new", "muladd", "--inputs", "a", "--expr", "a", "--defaults", "-o", str(tmp_path)]
    assert CliRunner().invoke(main, args).exit_code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    op = tmp_path / "muladd"
    shutil.rmtree(op / "tests")
    (op / "tests").symlink_to(outside)
    result = CliRunner().invoke(main, [*args, "--force"])
    assert result.exit_code == 1 and "symlink" in result.output
    assert list(outside.iterdir()) == []


def test_update_failing_midway_rolls_back(op, new_templates, monkeypatch):
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    edit(new_templates / "elementwise" / HEADER, "#pragma once\n", "#pragma once\n// v2\n")
    before = tree(op)
    with failing_replace(monkeypatch, 4, OSError(13, "Permission denied", "a file")):
        result = CliRunner().invoke(main, ["update", str(op)])
        assert result.exit_code == 1 and "nothing was changed" in result.output
    assert tree(op) == before
    assert not [p for p in op.iterdir() if p.name.startswith(".kernelgen-staging")]


def test_up_to_date_update_writes_nothing(op):
    stamps = {p: p.stat().st_mtime_ns for p in op.rglob("*")}
    result = update(str(op))
    assert result.exit_code == 0 and "is up to date" in result.output
    assert {p: p.stat().st_mtime_ns for p in op.rglob("*")} == stamps


def test_missing_record_is_rebuilt_only_inside_kernelgen(op):
    (op / record.RECORD).unlink()
    header = op / "muladd/csrc/muladd/muladd.h"
    edit(header, *USER_EDIT)
    before = {k: v for k, v in tree(op).items() if not k.startswith(".kernelgen/")}
    result = CliRunner().invoke(main, ["update", "--rebuild-record", str(op)])
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in tree(op).items() if not k.startswith(".kernelgen/")} == before  # edits untouched
    again = update(str(op))
    assert again.exit_code == 0 and "my edit" in header.read_text()


def test_stale_staging_from_a_killed_run_is_swept(op, new_templates):
    stale = op / ".kernelgen-staging-999999999-abcd"
    (stale / "new").mkdir(parents=True)
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    assert update(str(op)).exit_code == 0
    assert not stale.exists()


@pytest.fixture
def v3_library(tmp_path):
    """examples/myteam-ops as template version 3 generated it (before --abi): ATen code, no `abi` answer."""
    import tarfile

    with tarfile.open(REPO / "tests/fixtures/myteam_ops_template_v3.tar.gz") as archive:
        archive.extractall(tmp_path / "old", filter="data")
    return tmp_path / "old" / "examples" / "myteam-ops"


def test_template_v3_package_stays_on_the_full_abi(v3_library):
    """Updating a package made before --abi keeps every line of its C++ and build: it is `full`."""
    before = tree(v3_library)
    assert "abi" not in (v3_library / ".copier-answers.yml").read_text()
    result = update(str(v3_library))
    assert result.exit_code == 0, result.output
    after = tree(v3_library)
    # None removed, and these added: the package's elementwise and matmul kernels, in ATen's spelling,
    # and the Triton ops' shared eager fast path (template version 9); the test suites each kind shares
    # and their error model (10); the launches' per-device cache (42); no stable-ABI header (stable_utils.h).
    headers = ["myteam_ops/csrc/kernelgen/elementwise.cuh", "myteam_ops/csrc/kernelgen/gemm.cuh"]
    cache = "myteam_ops/csrc/kernelgen/per_device.cuh"
    suites = [f"myteam_ops/testing/{name}.py" for name in
              ("__init__", "error_model", "suite", "elementwise", "matmul", "triton_eager")]
    assert sorted(after) == sorted([*before, *headers, cache, "myteam_ops/_triton_eager.py", *suites])
    for header in headers:
        assert b"c10/cuda/CUDAException.h" in after[header] and b"C10_CUDA_KERNEL_LAUNCH_CHECK" in after[header]
    assert b"c10/cuda/CUDAException.h" in after[cache] and b"C10_CUDA_CHECK(" in after[cache]
    assert b"torch/csrc/stable" not in after[cache]
    kept = [rel for rel in before if rel.endswith((".cpp", ".cu", ".h")) or rel in (
        "setup.py", "pyproject.toml", "README.md", "myteam_ops/_build.py")]
    assert len(kept) > 20
    # Only what later template versions improved in the kernels changes (the launch rule, x ** 3 as
    # multiplications, fast_float), the matmul's epilogue hook (its CPU loop and kernels call
    # matmul_epilogue, which returns acc), and the comments of the op headers; nothing moves to the
    # stable ABI; pyproject.toml lists the testing package.
    changed = [rel for rel in kept if after[rel] != before[rel]]
    assert all(rel.endswith(("_kernel.cu", "/opmath.h", ".h")) or rel in ("myteam_ops/csrc/matmul/matmul.cpp", "README.md",
                                                                           "setup.py", "pyproject.toml")
               for rel in changed), changed
    # setup.py writes the build record once the extension is built (not for `setup.py --help`); nothing else.
    added = set(after["setup.py"].decode().splitlines()) - set(before["setup.py"].decode().splitlines())
    assert any("class BuildWithRecord(BuildExtension):" in line for line in added)
    assert not any("stable" in line.lower() or "py_limited_api" in line for line in added)
    # The README gains lines (template version 7: the Triton ops' eager fast path), none about an ABI, and
    # loses two: the test file's row, which version 10 rewrites (its suite moved to <package>/testing/), and
    # the Triton op's backward line, which version 15 rewrites (the op keeps the stub: it was recorded before
    # kernelgen generated a Triton backward).
    old_readme, new_readme = before["README.md"].decode().splitlines(), after["README.md"].decode().splitlines()
    assert {line for line in set(old_readme) - set(new_readme)} == {
        "| `tests/test_<op>.py` | correctness on CPU and CUDA, every dtype, gradcheck, opcheck, compile, errors |",
        "3. **The backward**: `_backward` (the AUTOGRAD STUB), the `torch.func.vjp` of `reference` by default."}
    assert any("before kernelgen generated a Triton backward" in line for line in new_readme)
    assert not any("stable" in line.lower() for line in set(new_readme) - set(old_readme))
    assert "return acc;" in after["myteam_ops/csrc/matmul/matmul_problem.h"].decode()
    for rel in changed:
        if rel.endswith(".h") and not rel.endswith(("/opmath.h", "_kernel.h", "_problem.h")):
            old_lines, new_lines = before[rel].decode().splitlines(), after[rel].decode().splitlines()
            code = [line for line in set(old_lines) ^ set(new_lines) if not line.lstrip().startswith("//")]
            assert code == [], (rel, code)
    for rel in changed:
        assert b"torch/csrc/stable" not in after[rel] and b"STD_CUDA" not in after[rel], rel
    # The loader takes the templates' fixes (the check for two builds side by side), nothing ABI-related.
    loader = after["myteam_ops/_loader.py"].decode()
    assert "several compiled extensions" in loader and "torch_target_version" not in loader
    answers = (v3_library / ".copier-answers.yml").read_text()
    assert "abi: full\n" in answers and f"_template_version: '{TEMPLATE_VERSION}'" in answers
    # The ops listing says so, and an op added now follows the package: ATen code.
    listing = CliRunner().invoke(main, ["ops", "--json", str(v3_library)])
    assert '"abi": "full"' in listing.output
    added = CliRunner().invoke(main, ["add", "relu2", "--inputs", "x", "--expr", "max(x, 0) * x", "--defaults",
                                      "--package", str(v3_library)])
    assert added.exit_code == 0, added.output
    cpp = (v3_library / "myteam_ops/csrc/relu2/relu2.cpp").read_text()
    assert "TORCH_LIBRARY_FRAGMENT(myteam, m)" in cpp and "STABLE" not in cpp
    assert not (v3_library / "myteam_ops/csrc/stable_utils.h").exists()


# ---- issue 30 -------------------------------------------------------------------------------------


def _gzip_bomb(expanded_mib: int) -> bytes:
    """A valid gzip stream that inflates to ``expanded_mib`` MiB of zeros, about 1 KiB per MiB:
    one MiB compressed once and repeated (a full flush makes each copy independent)."""
    import zlib

    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = compressor.compress(bytes(1 << 20)) + compressor.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + chunk * expanded_mib + final + b"\x00" * 8  # the trailer is never reached


def test_a_record_that_expands_to_gigabytes_is_refused_within_a_memory_limit(op):
    """Issue 30, item 3: a 4 MB record that inflates to 4 GiB. The record is decompressed with a
    cap, so `update` answers in one line even with 1 GiB of address space."""
    import resource
    import subprocess
    import sys

    (op / record.RECORD).write_bytes(_gzip_bomb(4096))

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run([sys.executable, "-m", "kernelgen", "update", str(op)], capture_output=True, text=True,
                          timeout=300, preexec_fn=limit_memory)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "expands to more than 64 MiB: it is not a kernelgen record" in done.stderr


def test_a_record_is_read_with_a_cap_too(op):
    (op / record.RECORD).write_bytes(b"\x1f\x8b" + bytes(record.MAX_RECORD_BYTES))
    result = update(str(op))
    assert result.exit_code == 1 and "is larger than 64 MiB" in result.output


def test_update_of_a_package_whose_module_directory_is_gone_says_so(op):
    """Issue 30: with muladd/muladd/ deleted, update said "up to date" (each file counted as one
    the user deleted on purpose)."""
    shutil.rmtree(op / "muladd")
    before = tree(op)
    result = update(str(op))
    assert result.exit_code == 1
    assert f"{op / 'muladd'} is missing: the package's Python module (" in result.output
    assert "up to date" not in result.output
    assert tree(op) == before


def test_a_refused_write_names_the_destination_not_the_staging_path(op, new_templates, monkeypatch):
    """Issue 30: the message named err.filename, a path in the staging directory that is gone by
    the time the user reads it."""
    import errno
    import os

    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    real_replace = os.replace
    calls = {"n": 0}

    def refused(src, dst):
        calls["n"] += 1
        if calls["n"] == 2:  # the first file moved in (after its old version was moved aside): .kernelgen/README.md
            raise OSError(errno.EACCES, "Permission denied", os.fspath(src), None, os.fspath(dst))
        return real_replace(src, dst)

    before = tree(op)
    monkeypatch.setattr("kernelgen.fsutil.os.replace", refused)
    result = CliRunner().invoke(main, ["update", str(op)])
    monkeypatch.setattr("kernelgen.fsutil.os.replace", real_replace)
    assert result.exit_code == 1, result.output
    assert ".kernelgen-staging" not in result.output, result.output
    assert f"writing {op / '.kernelgen/README.md'} failed: Permission denied; nothing was changed" in result.output
    assert tree(op) == before


def test_staging_that_holds_the_only_copies_is_never_swept(op, new_templates):
    """A run killed (SIGKILL) while it moved files leaves the originals in its staging directory:
    the next run refuses to write, names that directory and leaves it alone. Staging of a run
    that had finished moving (its commit marker) is swept as before."""
    abandoned = op / ".kernelgen-staging-999999999-abcd"
    (abandoned / "backup").mkdir(parents=True)
    (abandoned / "backup" / "README.md").write_text("the user's only copy\n")
    finished = op / ".kernelgen-staging-999999998-efgh"
    (finished / "backup").mkdir(parents=True)
    (finished / "backup" / "README.md").write_text("obsolete\n")
    (finished / "committed").touch()
    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    before = tree(op)
    result = CliRunner().invoke(main, ["update", str(op)])
    assert result.exit_code == 1, result.output
    assert f"{abandoned} holds files that an interrupted kernelgen run moved aside and did not put back" in result.output
    assert (abandoned / "backup" / "README.md").read_text() == "the user's only copy\n"
    assert tree(op) == before
    shutil.rmtree(abandoned)
    assert update(str(op)).exit_code == 0
    assert not finished.exists()


def test_a_rollback_that_fails_keeps_the_originals_and_names_them(op, new_templates, monkeypatch):
    """The disk fails half-way and keeps failing, so the rollback cannot put every file back: the
    staging directory, which holds the only copies, is kept, and the message says where."""
    import os

    edit(new_templates / "package/README.md.jinja", "## Build and test", "## Build and test (v2)")
    readme = (op / "README.md").read_bytes()
    real_replace = os.replace
    calls = {"n": 0}

    def failing_from_the_fourth(src, dst):
        calls["n"] += 1
        if calls["n"] >= 4:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr("kernelgen.fsutil.os.replace", failing_from_the_fourth)
    result = CliRunner().invoke(main, ["update", str(op)])
    monkeypatch.setattr("kernelgen.fsutil.os.replace", real_replace)
    assert result.exit_code == 1, result.output
    (staging,) = [p for p in op.iterdir() if p.name.startswith(".kernelgen-staging")]
    assert f"could not be put back (first: {op / '.kernelgen'}" in result.output, result.output
    assert f"the originals are kept in {staging / 'backup'}: copy them back into the package" in result.output
    assert "nothing was changed" not in result.output
    kept = {p.relative_to(staging / "backup").as_posix(): p.read_bytes()
            for p in (staging / "backup").rglob("*") if p.is_file()}
    assert kept and all(not (op / rel).exists() for rel in kept)  # each is the only copy
    assert (op / "README.md").read_bytes() == readme  # not reached before the disk failed
