"""The library API (kernelgen.api, exported lazily by `import kernelgen`): new -> add -> update from
Python, the results they return, and errors that are one line, of the right class, with nothing
half-written."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import tree

import kernelgen
from kernelgen.errors import ConflictError, DestinationError, ExprError, KernelgenError, SpecError


def _one_line(err: KernelgenError) -> str:
    message = str(err)
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.fixture
def pkg(tmp_path):
    spec = kernelgen.OpSpec.create("muladd", inputs="a,b,c", expr="a*b+c", namespace="team")
    result = kernelgen.new(kernelgen.PackageSpec.for_new_op(spec, name="team-ops"), tmp_path)
    return result


def test_new_returns_what_it_wrote(tmp_path, pkg):
    assert pkg.path == tmp_path / "team-ops" and pkg.path.is_dir()
    assert pkg.written and pkg.conflicts == () and pkg.orphaned == () and pkg.backup is None and pkg.notes == ()
    assert pkg.package.namespace == "team" and [op.op_name for op in pkg.package.ops] == ["muladd"]
    assert {change.action for change in pkg.changes} == {"added"}
    written = set(tree(pkg.path))
    assert {change.path for change in pkg.changes} == written
    assert {".copier-answers.yml", "team_ops/ops/muladd.py", "tests/test_muladd.py"} <= written


def test_new_from_an_op_spec_names_the_package_after_the_op(tmp_path):
    result = kernelgen.new(kernelgen.OpSpec.create("fused-gelu", inputs="x", expr="x * sigmoid(1.702 * x)"), tmp_path)
    assert result.path == tmp_path / "fused-gelu" and result.package.package == "fused_gelu"


def test_add_then_update_round_trip(pkg):
    before = tree(pkg.path)
    dry = kernelgen.add("gelu", pkg.path, inputs="x", expr="x * sigmoid(1.702 * x)", dry_run=True)
    assert not dry.written and tree(pkg.path) == before  # a dry run writes nothing
    init = next(change for change in dry.changes if change.path == "team_ops/__init__.py")
    assert init.action == "updated" and "+from .ops.gelu import gelu" in init.diff

    shown = []
    added = kernelgen.add("gelu", pkg.path, inputs="x", expr="x * sigmoid(1.702 * x)", show_plan=shown.append)
    assert shown == [added] and added.written
    assert added.op is not None and added.op.op_name == "gelu" and added.op.namespace == "team"
    assert [op.op_name for op in added.package.ops] == ["muladd", "gelu"]
    actions = {change.path: change.action for change in added.changes}
    assert actions["team_ops/ops/gelu.py"] == "added" and actions["team_ops/__init__.py"] == "updated"
    assert [(change.path, change.action) for change in dry.changes] == list(actions.items())
    assert all(change.diff == "" for change in added.changes)  # diffs are for dry runs
    assert (pkg.path / "team_ops/ops/gelu.py").is_file()

    info = kernelgen.load_package(pkg.path)
    assert info.spec == added.package and info.template_version
    assert [op["torch_op"] for op in info.as_dict()["ops"]] == ["torch.ops.team.muladd", "torch.ops.team.gelu"]

    readme = pkg.path / "README.md"
    readme.write_text(readme.read_text() + "\n## Our notes\n")
    updated = kernelgen.update(pkg.path)
    assert not updated.written and updated.changes == () and updated.conflicts == ()  # up to date; edits kept
    assert readme.read_text().endswith("## Our notes\n")


def test_add_takes_an_op_spec_made_for_the_package(pkg):
    recorded = kernelgen.load_package(pkg.path).spec
    op = recorded.create_op("scale", inputs="x", expr="2 * x")
    assert (op.namespace, op.arch_list, op.abi) == (recorded.namespace, recorded.arch_list, recorded.abi)
    assert kernelgen.add(op, pkg.path).op == op


def test_an_op_of_another_namespace_is_refused(pkg):
    before = tree(pkg.path)
    with pytest.raises(SpecError) as info:
        kernelgen.add(kernelgen.OpSpec.create("scale", inputs="x", expr="2 * x"), pkg.path)
    assert info.value.param == "namespace" and "the package's namespace is 'team'" in _one_line(info.value)
    with pytest.raises(SpecError) as info:
        kernelgen.add("scale", pkg.path, inputs="x", expr="2 * x", arch_list="9.0")
    assert info.value.param == "arch_list"
    assert tree(pkg.path) == before


def test_a_bad_expression_is_an_expr_error_and_writes_nothing(pkg):
    before = tree(pkg.path)
    with pytest.raises(ExprError) as info:
        kernelgen.add("bad", pkg.path, inputs="x", expr="x.real")
    assert "attribute access" in _one_line(info.value) and info.value.param == "expr"
    assert tree(pkg.path) == before


def test_a_conflicting_add_raises_conflict_error_and_writes_nothing(pkg):
    init = pkg.path / "team_ops/__init__.py"
    init.write_text(init.read_text().replace("from .ops.muladd import muladd  # noqa: E402\n",
                                             "from .ops.muladd import muladd  # noqa: E402  (my comment)\n"))
    before = tree(pkg.path)
    with pytest.raises(ConflictError) as info:
        kernelgen.add("gelu", pkg.path, inputs="x", expr="x")
    assert "conflicts with your edits in team_ops/__init__.py; nothing was written" in _one_line(info.value)
    assert tree(pkg.path) == before


def test_new_into_a_package_needs_force_and_backs_up_what_it_replaces(pkg, tmp_path):
    readme = pkg.path / "README.md"
    readme.write_text("edited\n")
    before = tree(pkg.path)
    spec = kernelgen.read_answers(pkg.path / ".copier-answers.yml")
    with pytest.raises(DestinationError) as info:
        kernelgen.new(spec, tmp_path)
    assert "exists and is not empty; use --force" in _one_line(info.value)
    assert tree(pkg.path) == before
    forced = kernelgen.new(spec, tmp_path, force=True)
    assert [(change.path, change.action) for change in forced.changes] == [("README.md", "updated")]
    assert forced.backup is not None and (forced.backup / "README.md").read_text() == "edited\n"
    assert forced.notes == (f"note: --force replaced 1 file(s); the previous versions are in {forced.backup}",)


def test_a_missing_package_is_one_line(tmp_path):
    with pytest.raises(KernelgenError) as info:
        kernelgen.update(tmp_path / "nowhere")
    assert _one_line(info.value).endswith("is not a directory")
    with pytest.raises(KernelgenError):
        kernelgen.load_package(tmp_path)


def test_importing_kernelgen_stays_cheap_and_update_stays_a_function():
    code = ("import sys, kernelgen; assert 'copier' not in sys.modules and 'kernelgen.spec' not in sys.modules; "
            "import kernelgen.merge; assert callable(kernelgen.update) and kernelgen.update.__module__ == 'kernelgen.api'")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert set(kernelgen.__all__) >= {"new", "add", "update", "load_package", "generate", "OpSpec", "Result"}
    for name in kernelgen.__all__:
        assert getattr(kernelgen, name) is not None
