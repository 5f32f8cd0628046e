"""--backward {fused,vjp}: the generated backward op by default, the vjp stub on request (issue 29)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import tree

from kernelgen.cli import main
from kernelgen.cost import HEAVY_EPILOGUE_COST, distinct_math_cost
from kernelgen.errors import AnswersError
from kernelgen.spec import OpSpec, PackageSpec, parse_epilogue


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _new(tmp_path: Path, name: str, *options: str) -> Path:
    result = invoke("new", name, *options, "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    return tmp_path / name


def _cpp(root: Path, package: str, op: str) -> str:
    """Every C++/CUDA source and header of the op ``op`` (csrc/<op>/), concatenated."""
    return "".join(path.read_text() for path in sorted((root / package / "csrc" / op).rglob("*")) if path.is_file())


def _assert_stub(root: Path, package: str, op: str) -> None:
    """The op registers the vjp of its reference and has no backward op anywhere."""
    ops = (root / package / "ops" / f"{op}.py").read_text()
    assert "torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)" in ops
    assert "AUTOGRAD STUB" in ops and "torch.func.vjp(in_opmath, *saved)" in ops
    assert "--backward vjp" in ops  # the stub says why it is there
    assert "_BACKWARD" not in ops and f"{op}_backward.default" not in ops
    cpp = _cpp(root, package, op)
    assert f"{op}_backward" not in cpp and f"{op}_grad" not in cpp
    test = (root / "tests" / f"test_{op}.py").read_text()
    assert "backward=" not in test and "grad_error_bound" not in test
    compile(ops, "ops.py", "exec")
    compile(test, "test.py", "exec")


def _assert_generated_backward(root: Path, package: str, op: str) -> None:
    ops = (root / package / "ops" / f"{op}.py").read_text()
    assert "register_fake(_BACKWARD)" in ops and f"{op}_backward.default(" in ops and "def _backward_vjp" in ops
    cpp = _cpp(root, package, op)
    assert f"{op}_backward(Tensor _grad" in cpp and f"{op}_grad" in cpp
    test = (root / "tests" / f"test_{op}.py").read_text()
    assert f"backward=torch.ops.{package}.{op}_backward.default" in test and "grad_error_bound" in test


def test_vjp_keeps_the_stub_and_generates_no_backward_op(tmp_path):
    root = _new(tmp_path, "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)", "--backward", "vjp")
    _assert_stub(root, "gate", "gate")
    answers = yaml.safe_load((root / ".copier-answers.yml").read_text())
    assert answers["ops"][0]["backward"] == "vjp"
    readme = (root / "README.md").read_text()
    assert "This op keeps the stub (`backward: vjp` in `.copier-answers.yml`: made with `--backward vjp`" in readme
    assert "(the AUTOGRAD STUB)" in readme


@pytest.mark.parametrize("options", [(), ("--backward", "fused")])
def test_the_default_is_the_generated_backward_and_is_not_recorded(tmp_path, options):
    root = _new(tmp_path, "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)", *options)
    _assert_generated_backward(root, "gate", "gate")
    answers = yaml.safe_load((root / ".copier-answers.yml").read_text())
    assert "backward" not in answers["ops"][0]  # older records and the examples stay as they are
    readme = (root / "README.md").read_text()
    assert "`gate_grad` in `gate/csrc/gate/gate.h`" in readme and "--backward vjp" not in readme


def test_the_same_op_differs_only_where_the_backward_is(tmp_path):
    """--backward vjp on an elementwise CUDA op on the stable ABI renders what the op's kind renders
    without a generated backward: the shared files are the same but for the README and the record (the
    benchmark differs too: its --backward races the op's vjp stub only where the op has a generated backward)."""
    fused = _new(tmp_path / "a", "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)")
    vjp = _new(tmp_path / "b", "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)", "--backward", "vjp")
    before, after = tree(fused), tree(vjp)
    assert set(before) == set(after)  # the same files: the backward lives inside the op's own sources
    changed = {rel for rel in before if before[rel] != after[rel]}
    assert changed == {
        ".copier-answers.yml", ".kernelgen/generated.json.gz", "README.md", "gate/ops/gate.py", "tests/test_gate.py",
        "benchmarks/bench_gate.py", "gate/csrc/gate/gate.cpp", "gate/csrc/gate/gate.h", "gate/csrc/gate/gate_checks.h",
        "gate/csrc/gate/cuda/gate_cuda.cpp", "gate/csrc/gate/cuda/gate_kernel.cu", "gate/csrc/gate/cuda/gate_kernel.h",
    }


@pytest.mark.parametrize("options", [
    ("--backend", "triton", "--inputs", "x", "--expr", "x * sigmoid(x)"),
    ("--kind", "rowwise", "--backend", "triton", "--inputs", "x", "--expr", "x - max(x)"),
    ("--kind", "matmul", "--bias"),
    ("--abi", "full", "--inputs", "x", "--expr", "x * sigmoid(x)"),
])
def test_vjp_is_accepted_where_the_stub_is_the_only_backward(tmp_path, options):
    """Where kernelgen has no generated backward, vjp is what fused gives; the answer is still recorded,
    so that the op keeps its stub when kernelgen learns to generate one for it."""
    root = _new(tmp_path, "op1", *options, "--backward", "vjp")
    ops = (root / "op1" / "ops" / "op1.py").read_text()
    assert "torch.library.register_autograd(_OP, _backward" in ops and "_BACKWARD" not in ops
    assert yaml.safe_load((root / ".copier-answers.yml").read_text())["ops"][0]["backward"] == "vjp"


def test_a_rowwise_op_gets_a_generated_backward_and_vjp_keeps_the_stub(tmp_path):
    """A rowwise CUDA C++ op on the stable ABI: GradOp and <op>_grad in its header, <op>_backward registered
    for CPU and CUDA and called from autograd, the README pointing at them; --backward vjp keeps the stub."""
    options = ("--kind", "rowwise", "--inputs", "x", "--weights", "w", "--expr", "x * rsqrt(mean(x * x) + 1e-6) * w")
    root = _new(tmp_path / "a", "rms", *options)
    header = (root / "rms" / "csrc" / "rms" / "rms.h").read_text()
    assert "struct GradOp {" in header and "OPMATH_FN void rms_grad(acc_t _grad, acc_t x, acc_t w, const acc_t* _r, acc_t (&_d)[2])" in header
    cpp = _cpp(root, "rms", "rms")
    assert 'm.def("rms_backward(Tensor _grad, Tensor x, Tensor w, bool[] _needs) -> Tensor[]");' in cpp
    assert cpp.count('m.impl("rms_backward"') == 2 and "launch_rms_backward" in cpp
    ops = (root / "rms" / "ops" / "rms.py").read_text()
    assert "torch.ops.rms.rms_backward.default(grad_out, *ctx.saved_tensors, needs)" in ops and "_backward_vjp" in ops
    assert "`rms_grad` and the `rms_grad_reduce<k>_arg` functions" in (root / "README.md").read_text()
    assert "grad_error_bound=grad_error_bound" in (root / "tests" / "test_rms.py").read_text()
    _assert_stub(_new(tmp_path / "b", "rms", *options, "--backward", "vjp"), "rms", "rms")


def test_a_rowwise_backward_states_its_code_size_for_the_launch(tmp_path):
    """GradOp::kCode is the instructions an element of the backward's steps inlines (rowplan.steps_code): an
    RMSNorm's is small, and a formula calling sin and cos (each about 100 instructions inlined) is large enough
    that 32 unrolled elements pass GradLaunch's kGradCode (10240), so its launch takes the narrow build."""
    import re

    def code(name, *options):
        root = _new(tmp_path / name, name, "--kind", "rowwise", *options)
        return int(re.search(r"static constexpr int kCode = (\d+);", (root / name / "csrc" / name / f"{name}.h").read_text()).group(1))

    light = code("rms", "--inputs", "x", "--weights", "w", "--expr", "x * rsqrt(mean(x * x) + 1e-6) * w")
    heavy = code("trig", "--inputs", "x", "--weights", "v,w", "--expr", "(sin(x) + mean(sin(sin(x) * sin(x) * v))) * w")
    assert 0 < light * 32 < 2048 and heavy * 32 > 10240


def test_a_rowwise_mask_reads_its_argument_computed_once_with_exact_arithmetic(tmp_path):
    """The gradient of a max or min that is not a softmax-style stabilizer reads the mask [f == max(f)]. Where
    f reads no per-row value it is a shared term of the backward (_s0), computed once per element with exact
    sums and products (never contracted into an FMA), read by the reduction and the masks alike; the CPU
    loop and the multi-pass kernel, which compute it again in each step, get the same bits each time. A
    softmax's max needs no mask, and keeps plain arithmetic."""
    masked = _new(tmp_path / "a", "msub", "--kind", "rowwise", "--inputs", "x,y", "--expr", "x * y - max(x * y + x ** 3)")
    header = (masked / "msub" / "csrc" / "msub" / "msub.h").read_text()
    assert ("OPMATH_FN acc_t msub_grad_shared0(acc_t _grad, acc_t x, acc_t y) {\n"
            "  return opmath::add_rn(opmath::mul_rn(x, y), opmath::ipow<3, true>(x));") in header
    assert ("OPMATH_FN acc_t msub_grad_reduce1_arg(acc_t _grad, acc_t x, acc_t y, acc_t _s0, const acc_t* _r) {\n"
            "  return _s0;") in header
    assert "return (_s0 == _r[1] ? acc_t(1.0) : acc_t(0.0));" in header  # the mask's reduction
    assert "const acc_t _t1 = (_s0 == _r[1] ? acc_t(1.0) : acc_t(0.0));" in header  # and the gradients'
    assert "static constexpr int kShared = kGradShared;" in header and "kGradShared = 1;" in header
    softmax = _new(tmp_path / "b", "sm", "--kind", "rowwise", "--inputs", "x", "--expr", "exp(x - max(x)) / sum(exp(x - max(x)))")
    assert "_rn(" not in (softmax / "sm" / "csrc" / "sm" / "sm.h").read_text()


def test_a_rowwise_backward_computes_a_costly_term_its_steps_share_once(tmp_path):
    """The backward's steps (its reductions' arguments, then the gradients) are separate passes over the row,
    as the forward's are: a costly per-element term two of them compute (a division) is a shared term of the
    backward, _s0 in GradOp, computed once per element (the CUDA register kernel keeps it in registers).
    GradOp says which columns the term reads and which steps read it, so that the multi-pass kernel and
    the CPU loop compute it where it is read, from the columns they load for it."""
    root = _new(tmp_path, "yn", "--kind", "rowwise", "--inputs", "x,y", "--weights", "w",
                "--expr", "x / (1 + y * y) * rsqrt(mean((x / (1 + y * y)) ** 2) + 1e-6) * w")
    backward = (root / "yn" / "csrc" / "yn" / "yn.h").read_text().split("---- the backward")[1]
    assert "constexpr int kGradShared = 1;" in backward
    assert ("OPMATH_FN acc_t yn_grad_shared0(acc_t _grad, acc_t x, acc_t y, acc_t w) {\n"
            "  return x / (acc_t(1.0) + y * y);") in backward
    assert "return opmath::square(_s0);" in backward and "_d[2] = _grad * (_s0 * _t0);" in backward
    assert "      {false, false, false, false},  // _r[0]\n" in backward  # it reads the term alone
    assert "      {false, true, true, false},  // _s0\n" in backward  # the term reads x and y
    assert "      {true},  // _r[0]\n      {false},  // _r[1]\n      {true},  // the gradients\n" in backward
    assert "v[4] = yn_grad_shared0<acc_t>(v[0], v[1], v[2], v[3]);" in backward
    assert "yn_grad<acc_t>(v[0], v[1], v[2], v[3], v[4], r, d);" in backward


def test_a_rowwise_mask_of_an_argument_with_a_row_value_is_a_term_with_a_level(tmp_path):
    """Where f reads a per-row value (max(x * x - mean(x))), f is still one shared term, computed with exact
    sums and products, but of level 1: the kernels compute it once mean(x) is known, and the reduction,
    its masks and the gradients read that one value. GradOp says each term's level (kSharedLevel), and
    share_level<L> computes the terms of level L from the values and the reductions so far."""
    root = _new(tmp_path, "mc", "--kind", "rowwise", "--inputs", "x", "--expr", "x * max(x * x - mean(x))")
    header = (root / "mc" / "csrc" / "mc" / "mc.h").read_text()
    assert ("OPMATH_FN acc_t mc_grad_shared0(acc_t _grad, acc_t x, const acc_t* _r) {\n"
            "  return opmath::sub_rn(opmath::mul_rn(x, x), _r[0]);") in header
    assert "// It reads per-row values: level 1, computed once _r[0] is known." in header
    # (the reductions numbered pass by pass: mean(x) and sum(_grad * x) first, then the maximum, then its masks)
    assert ("OPMATH_FN acc_t mc_grad_reduce2_arg(acc_t _grad, acc_t x, acc_t _s0, const acc_t* _r) {\n"
            "  return _s0;") in header
    assert "return (_s0 == _r[2] ? acc_t(1.0) : acc_t(0.0));" in header  # the masks read the term
    assert "mc_grad_reduce2_arg<acc_t>(_grad" not in header  # no mask calls the reduction's function
    assert "static constexpr int kShareLevels = 2;" in header and "static constexpr int kSharedLevel[kShared] = {1};" in header
    assert ("    if constexpr (L == 1) {\n"
            "      v[2] = mc_grad_shared0<acc_t>(v[0], v[1], r);\n"
            "    }\n") in header


def test_a_rowwise_backward_shares_a_costly_term_that_reads_a_per_row_value(tmp_path):
    """A costly term that reads a reduction (sigmoid(cos((f - max(f * f)) * w)) and its sin below) and that a
    later reduction and the gradients both compute is a term of level 1: computed once per element after
    the maximum, not once in each step."""
    root = _new(tmp_path, "sc", "--kind", "rowwise", "--inputs", "x1,x2", "--weights", "w1",
                "--expr", "sigmoid(cos((x1 / (x2 * x2 + 1.0) - max(x1 / (x2 * x2 + 1.0) * (x1 / (x2 * x2 + 1.0)))) * w1))")
    backward = (root / "sc" / "csrc" / "sc" / "sc.h").read_text().split("---- the backward")[1]
    assert "// _s1 = sigmoid(cos((x1 / (x2 * x2 + 1.0) - _r0) * w1))\n// It reads per-row values: level 1" in backward
    assert "// _s2 = sin((x1 / (x2 * x2 + 1.0) - _r0) * w1)\n// It reads per-row values: level 1" in backward
    assert "static constexpr int kSharedLevel[kShared] = {0, 1, 1};" in backward
    grad = backward.split("OPMATH_FN void sc_grad(")[1].split("\n}\n")[0]
    assert "sigmoid" not in grad and "sin" not in grad and "_s1" in grad and "_s2" in grad


def test_a_plain_matmul_keeps_its_analytic_backward(tmp_path):
    """A @ B's backward is two products by the op itself, no generated backward op: vjp leaves it."""
    fused = _new(tmp_path / "a", "mm", "--kind", "matmul")
    vjp = _new(tmp_path / "b", "mm", "--kind", "matmul", "--backward", "vjp")
    ops = (vjp / "mm" / "ops" / "mm.py").read_text()
    assert ops == (fused / "mm" / "ops" / "mm.py").read_text() and "dL/dA = dL/dC @ B^T" in ops


@pytest.mark.parametrize(("value", "line"), [
    ("fast", "Error: Invalid value for '--backward': 'fast' is not one of 'fused', 'vjp'."),
    ("vpj", "Error: Invalid value for '--backward': 'vpj' is not one of 'fused', 'vjp'; did you mean 'vjp'?"),
    ("", "Error: Invalid value for '--backward': '' is not one of 'fused', 'vjp'."),
])
def test_a_bad_value_is_a_one_line_usage_error(tmp_path, value, line):
    result = invoke("new", "gate", "--inputs", "x", "--expr", "x", "--backward", value, "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == line
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_add_with_vjp_and_update_keep_it(tmp_path):
    lib = _new(tmp_path, "team-ops", "--op", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--namespace", "team")
    result = invoke("add", "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g)", "--backward", "vjp", "--defaults",
                    "--package", str(lib))
    assert result.exit_code == 0, result.output
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x * sigmoid(1.702 * x)", "--defaults", "--package", str(lib))
    assert result.exit_code == 0, result.output
    _assert_stub(lib, "team_ops", "gate")
    for op in ("muladd", "gelu"):  # the package's other ops keep their generated backward
        ops = (lib / "team_ops" / "ops" / f"{op}.py").read_text()
        assert f"torch.ops.team.{op}_backward.default(" in ops
    answers = yaml.safe_load((lib / ".copier-answers.yml").read_text())
    assert [op.get("backward") for op in answers["ops"]] == [None, "vjp", None]
    listed = invoke("ops", "--json", str(lib))
    assert '"backward": "vjp"' in listed.output

    # The recorded answer is read back: update re-renders the same files (nothing to do) ...
    result = invoke("update", str(lib))
    assert result.exit_code == 0 and "is up to date" in result.output, result.output
    # ... and `new --answers` regenerates the package byte for byte.
    again = invoke("new", "--answers", str(lib / ".copier-answers.yml"), "-o", str(tmp_path / "again"))
    assert again.exit_code == 0, again.output
    assert tree(tmp_path / "again" / "team-ops") == tree(lib)


def test_add_refuses_a_bad_value_and_writes_nothing(tmp_path):
    lib = _new(tmp_path, "team-ops", "--op", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--namespace", "team")
    before = tree(lib)
    result = invoke("add", "gate", "--inputs", "x", "--expr", "x", "--backward", "none", "--defaults", "--package", str(lib))
    assert result.exit_code == 2 and "Invalid value for '--backward'" in result.output.strip().splitlines()[-1]
    assert tree(lib) == before


def test_opspec_backward():
    fused = OpSpec.create("gate", inputs="x", expr="x")
    vjp = OpSpec.create("gate", inputs="x", expr="x", backward="vjp")
    assert fused.fused_backward and not vjp.fused_backward
    assert "backward" not in fused.record() and vjp.record()["backward"] == "vjp"
    assert not OpSpec.create("gate", inputs="x", expr="x", abi="full").fused_backward
    with pytest.raises(Exception, match=r"unknown backward 'vpj'; did you mean 'vjp'\?"):
        OpSpec.create("gate", inputs="x", expr="x", backward="vpj")
    pkg = PackageSpec.for_new_op(vjp)
    assert pkg.render_data()["fused_backward_ops"] == []
    assert PackageSpec.for_new_op(fused).render_data()["fused_backward_ops"] == ["gate"]
    assert PackageSpec.from_answers(pkg.answers()).ops[0].backward == "vjp"


def test_an_op_recorded_before_its_kind_had_a_generated_backward_keeps_the_stub():
    """Its formula may carry edits the recorded expression does not, and its backward, the vjp of
    reference(), follows them: reading the record (update, new --answers) keeps it, as backward: vjp."""
    def record(version):
        return {"_template_version": version, "name": "lib", "package": "lib", "namespace": "lib", "abi": "stable",
                "ops": [{"name": "act", "kind": "elementwise", "inputs": ["x"], "expr": "x * sigmoid(x)"},
                        {"name": "rms", "kind": "rowwise", "inputs": ["x"], "weights": ["w"], "expr": "x * rsqrt(mean(x * x) + 1e-6) * w"},
                        {"name": "act_tl", "kind": "elementwise", "backend": "triton", "inputs": ["x"], "expr": "x"},
                        {"name": "rms_tl", "kind": "rowwise", "backend": "triton", "inputs": ["x"], "expr": "x - max(x)"},
                        {"name": "lg", "kind": "matmul", "epilogue": "acc * sigmoid(acc) + bias", "bias": True}]}
    backwards = {version: [op.backward for op in PackageSpec.from_answers(record(version)).ops]
                 for version in ("10", "13", "14", "15", "17")}
    assert backwards == {"10": ["vjp"] * 5, "13": ["fused", "vjp", "vjp", "vjp", "vjp"],
                         "14": ["fused", "fused", "vjp", "vjp", "vjp"], "15": ["fused"] * 4 + ["vjp"], "17": ["fused"] * 5}
    assert [op.saves_acc for op in PackageSpec.from_answers(record("15")).ops][-1] is False  # the stub saves nothing
    assert PackageSpec.from_answers(record("13")).answers()["ops"][1]["backward"] == "vjp"  # recorded from now on
    full = {**record("10"), "abi": "full"}
    full["ops"] = [full["ops"][0]]  # the full ABI has no rowwise C++ ops
    assert [op.backward for op in PackageSpec.from_answers(full).ops] == ["fused"]  # it has no generated backward
    # A Triton op has no C++: its generated backward does not depend on the package's ABI.
    full_tl = {**record("15"), "abi": "full", "ops": record("15")["ops"][2:4]}
    assert [op.fused_backward for op in PackageSpec.from_answers(full_tl).ops] == [True, True]


@pytest.mark.parametrize(("value", "message"), [
    ("fast", "ops[0].backward: unknown backward 'fast'; choose from fused, vjp"),
    (3, "'backward' must be a string, not int"),
])
def test_a_bad_recorded_backward_names_the_field(value, message):
    data = PackageSpec.for_new_op(OpSpec.create("gate", inputs="x", expr="x")).answers()
    data["ops"][0]["backward"] = value  # type: ignore[index]
    with pytest.raises(AnswersError, match=re.escape(message)):
        PackageSpec.from_answers(data)


@pytest.mark.build
def test_a_vjp_op_builds_cpu_only_and_passes_its_tests(tmp_path):
    """The stub path on the stable ABI, compiled (CPU-only: the registration is the same) and run by
    the op's own tests: gradcheck of the vjp, and the generated-backward tests skipped."""
    pytest.importorskip("torch", reason="building a generated op needs torch")
    root = _new(tmp_path, "gate", "--inputs", "x,g", "--expr", "x * sigmoid(g) + tanh(x)", "--dtypes", "fp32,fp64",
                "--backward", "vjp")
    env = {key: value for key, value in os.environ.items() if key != "KERNELGEN_REQUIRE_CUDA"}
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, capture_output=True,
                           text=True, timeout=900, env={**env, "KERNELGEN_CPU_ONLY": "1"})
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"], cwd=root,
                           capture_output=True, text=True, timeout=900)
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout
    assert "gate's backward is the vjp of its reference" in tests.stdout  # the backward-op tests skip


def test_a_matmul_epilogue_gets_a_generated_backward_and_a_training_forward(tmp_path):
    """A matmul epilogue's derivatives (kernelgen.diff) become <op>_backward; since they read acc, the op
    gets a training forward that stores it, which the public function takes when a gradient is wanted."""
    root = _new(tmp_path, "lg", "--kind", "matmul", "--bias", "--epilogue", "(acc + bias) * sigmoid(1.702 * (acc + bias))")
    ops = (root / "lg" / "ops" / "lg.py").read_text()
    assert "torch.ops.lg.lg_with_acc.default(a, b, bias)[0]" in ops and "torch.is_grad_enabled()" in ops
    assert "torch.ops.lg.lg_backward.default(grad_out, acc, bias, needs)" in ops and "def _backward_vjp" in ops
    assert "torch.library.register_autograd(_WITH_ACC, _backward_with_acc" in ops
    assert "acc = torch.matmul(a, b)" in ops  # the registered op called directly computes acc again
    cpp = _cpp(root, "lg", "lg")
    assert "OPMATH_FN void lg_epilogue_grad(acc_t _grad, acc_t acc, acc_t bias, acc_t (&_d)[2])" in cpp
    assert "static constexpr bool kSavesAcc = true;" in cpp
    assert 'm.def("lg_with_acc(Tensor a, Tensor b, Tensor bias) -> (Tensor, Tensor)");' in cpp
    assert 'm.def("lg_backward(Tensor _grad, Tensor acc, Tensor bias, bool[] _needs) -> Tensor[]");' in cpp
    gemm = (root / "lg" / "csrc" / "kernelgen" / "gemm_sm90.cuh").read_text()
    assert "Sm90AuxStore" in gemm  # the CUTLASS epilogue stores the accumulator too
    tests = (root / "tests" / "test_lg.py").read_text()
    assert "def grad_error_bound(_m, _grad, acc, bias, acc_error):" in tests
    assert "with_acc=torch.ops.lg.lg_with_acc.default" in tests
    assert "`lg_epilogue_grad`" in (root / "README.md").read_text()


def test_float32_and_float64_take_cublas_product_and_an_epilogue_pass(tmp_path):
    """The GPU's float32 and float64 products are cuBLAS's (ATen's matmul by name), with the epilogue applied
    by a pass of its own (in place for inference; beside the accumulator for training); float16 and bfloat16
    keep the fused kernels, which are instantiated for them only. A plain product is cuBLAS's alone."""
    root = _new(tmp_path / "a", "lg", "--kind", "matmul", "--bias", "--epilogue", "(acc + bias) * sigmoid(1.702 * (acc + bias))")
    cuda = (root / "lg" / "csrc" / "lg" / "cuda" / "lg_cuda.cpp").read_text()
    assert "if (a.scalar_type() == ScalarType::Float || a.scalar_type() == ScalarType::Double) {" in cuda
    assert "const Tensor acc = kernelgen::library_product(a, b);" in cuda
    assert "Tensor c = acc_out != nullptr ? torch::stable::empty_like(acc) : acc;" in cuda
    assert "}), ScalarType::Half, ScalarType::BFloat16);" in cuda  # the fused kernels' dispatch
    kernel = (root / "lg" / "csrc" / "lg" / "cuda" / "lg_kernel.cu").read_text()
    assert "template void launch_lg_epilogue<float>(" in kernel and "template void launch_lg<float>(" not in kernel
    assert "library_dtypes=(torch.float32, torch.float64)" in (root / "tests" / "test_lg.py").read_text()
    plain = _new(tmp_path / "b", "mm", "--kind", "matmul", "--dtypes", "float32")
    cuda = (plain / "mm" / "csrc" / "mm" / "cuda" / "mm_cuda.cpp").read_text()
    assert "  return kernelgen::library_product(a, b);\n}" in cuda and "THO_DISPATCH_V2" not in cuda
    assert "launch_mm" not in (plain / "mm" / "csrc" / "mm" / "cuda" / "mm_kernel.cu").read_text()


def test_a_heavy_epilogue_takes_a_pass_of_its_own_in_the_half_types_too(tmp_path):
    """An epilogue whose math cost is above kernelgen.cost.HEAVY_EPILOGUE_COST runs after cuBLAS's product in
    float16 and bfloat16 as well: the op has no product kernels of its own (no CUTLASS file), and its
    comments, tests and README say why."""
    heavy = "sqrt(abs(bias) + 1.0) + sigmoid(tanh(sin(acc * 0.05)))"
    assert distinct_math_cost(parse_epilogue(heavy, True).tree) > HEAVY_EPILOGUE_COST
    root = _new(tmp_path, "hv", "--kind", "matmul", "--bias", "--epilogue", heavy)
    cuda_dir = root / "hv" / "csrc" / "hv" / "cuda"
    assert not (cuda_dir / "hv_sm90.cu").exists() and not (root / "hv" / "csrc" / "kernelgen" / "gemm_sm90.cuh").exists()
    cuda = (cuda_dir / "hv_cuda.cpp").read_text()
    assert "if (a.scalar_type()" not in cuda  # every dtype takes the library's product
    assert "}), ScalarType::Float, ScalarType::Double, ScalarType::Half, ScalarType::BFloat16);" in cuda
    assert f"the epilogue is heavy (math cost {distinct_math_cost(parse_epilogue(heavy, True).tree)}" in cuda
    kernel = (cuda_dir / "hv_kernel.cu").read_text()
    assert "launch_hv<" not in kernel and "template void launch_hv_epilogue<torch::headeronly::BFloat16>(" in kernel
    assert "library_dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16)" in \
        (root / "tests" / "test_hv.py").read_text()
    readme = " ".join((root / "README.md").read_text().split())
    assert "In float16 and bfloat16 this epilogue is heavy" in readme
    assert "with the epilogue in a pass of its own after cuBLAS's product" in readme
    light = "0.5 * (acc + bias) * (1 + erf((acc + bias) * 0.7071067811865476))"  # GELU stays fused
    assert OpSpec.create("g", kind="matmul", bias=True, epilogue=light).library_product_dtypes == ["float32", "float64"]


def test_a_linear_matmul_stores_no_accumulator(tmp_path):
    """acc + bias: the derivative of acc is 1, so the backward's products read the output's gradient itself,
    the backward op computes the bias's gradient alone, and the forward stores nothing more."""
    root = _new(tmp_path, "lin", "--kind", "matmul", "--bias")
    ops = (root / "lin" / "ops" / "lin.py").read_text()
    assert "_WITH_ACC" not in ops and "dacc = grad_out" in ops
    cpp = _cpp(root, "lin", "lin")
    assert "static constexpr bool kSavesAcc = false;" in cpp and "lin_with_acc" not in cpp
    assert 'm.def("lin_backward(Tensor _grad, Tensor bias, bool[] _needs) -> Tensor[]");' in cpp


def test_a_matmul_with_backward_vjp_keeps_the_stub(tmp_path):
    root = _new(tmp_path, "lg", "--kind", "matmul", "--bias", "--epilogue", "acc * sigmoid(acc) + bias", "--backward", "vjp")
    ops = (root / "lg" / "ops" / "lg.py").read_text()
    assert "AUTOGRAD STUB" in ops and "_BACKWARD" not in ops and "_with_acc" not in ops
    cpp = _cpp(root, "lg", "lg")
    assert "static constexpr bool kSavesAcc = false;" in cpp and "lg_epilogue_grad" not in cpp
    assert "this op keeps it (`backward: vjp`" in (root / "README.md").read_text()
