"""OpSpec validation: names, dtypes, arch lists, kinds."""

from __future__ import annotations

import re

import pytest

from kernelgen.errors import AnswersError, InvalidNameError, SpecError
from kernelgen.spec import (
    DEFAULT_ARCH_LIST,
    OpSpec,
    PackageSpec,
    normalize_op_name,
    parse_arch_list,
    parse_dtypes,
)


def test_hyphens_become_underscores():
    spec = OpSpec.create("fused-gelu", inputs="x", expr="x * sigmoid(1.702 * x)")
    assert spec.name == "fused-gelu" and spec.op_name == "fused_gelu" and spec.namespace == "fused_gelu"


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("", "is empty"),
        ("   ", "is empty"),
        ("1op", "starts with a digit"),
        ("class", "keyword"), ("float", "keyword"), ("lambda", "keyword"), ("new", "keyword"),
        ("namespace", "keyword"), ("match", "keyword"), ("template", "keyword"),
        ("a/b", "looks like a path"), ("../x", "looks like a path"), ("..", "looks like a path"),
        ("a\\b", "looks like a path"), ("~x", "looks like a path"),
        ("a.b", "not an identifier"), ("my op", "not an identifier"), ("op$", "not an identifier"),
        ("über", "not an identifier"), ("a;rm -rf", "not an identifier"),
        ("MulAdd", "must be lowercase"),
        ("_private", "reserved for the compiler"), ("a__b", "reserved for the compiler"),
        ("torch", "reserved"), ("os", "reserved"), ("reference", "reserved"), ("tl", "ops/tl.py binds itself"),
        ("wrap_triton", "binds itself"), ("libdevice", "binds itself"),
        ("x" * 65, "longer than 64"),
    ],
)
def test_bad_op_names(name, fragment):
    with pytest.raises(InvalidNameError) as info:
        normalize_op_name(name)
    assert fragment in str(info.value)
    assert info.value.param == "op_name"


def test_bad_input_names():
    for bad, fragment in [("a,class", "Python keyword"), ("a,a", "declared twice"), ("a,", "is empty"),
                          ("a,1b", "lowercase identifier"), ("a,b-c", "lowercase identifier"),
                          ("a,Q", "lowercase identifier"), ("a,_x", "lowercase identifier"),
                          ("a,namespace", r"C\+\+ keyword"), ("a,sigmoid", "function of the expression grammar"),
                          ("a,mean", "function of the expression grammar"), ("a," + "x" * 33, "longer than 32")]:
        with pytest.raises(SpecError, match=fragment):
            OpSpec.create("op", inputs=bad, expr="a")


def test_input_named_like_the_op_is_mapped():
    spec = OpSpec.create("scale", inputs="scale", expr="scale * 2")
    assert spec.inputs == ("scale",) and spec.identifiers("scale") == {"scale": "scale_arg"}


def test_dtypes_aliases_and_order():
    assert parse_dtypes("bf16, fp32") == ("float32", "bfloat16")
    assert parse_dtypes(["half", "double"]) == ("float64", "float16")
    with pytest.raises(SpecError, match="unsupported dtype 'int8'"):
        parse_dtypes("float32,int8")
    with pytest.raises(SpecError, match="empty"):
        parse_dtypes(" , ")
    with pytest.raises(SpecError, match=r"empty item \(item 2\)"):
        parse_dtypes("fp32,,bf16")
    with pytest.raises(SpecError, match="empty item"):
        parse_dtypes("fp32,")
    with pytest.raises(SpecError, match="--dtypes is empty"):
        parse_dtypes("")


def test_arch_list():
    assert parse_arch_list(DEFAULT_ARCH_LIST) == "8.0;9.0+PTX"
    assert parse_arch_list("8.0 9.0a") == "8.0;9.0a"
    with pytest.raises(SpecError, match=r"older than 7\.5"):
        parse_arch_list("7.0;8.0")
    with pytest.raises(SpecError, match="bad --arch-list entry 'sm_90'"):
        parse_arch_list("sm_90")
    with pytest.raises(SpecError, match="bad --arch-list entry"):
        parse_arch_list("9.0; -Xcompiler")


def test_kind_specific_options():
    with pytest.raises(SpecError, match="only for --kind elementwise"):
        OpSpec.create("mm", kind="matmul", inputs="a,b")
    with pytest.raises(SpecError, match="unknown kind"):
        OpSpec.create("mm", kind="conv")
    assert OpSpec.create("mm", kind="matmul").inputs == ()


def test_default_expression_sums_the_inputs():
    assert OpSpec.create("op", inputs="gate,up").expr == "gate + up"


def test_namespace_is_validated():
    with pytest.raises(InvalidNameError, match="namespace 'aten::x'"):
        OpSpec.create("op", inputs="x", expr="x", namespace="aten::x")
    assert OpSpec.create("op", inputs="x", expr="x", namespace="myteam").namespace == "myteam"


def test_answers_round_trip():
    spec = OpSpec.create("gelu", inputs="x", expr="x*sigmoid(1.702*x)", dtypes="fp32,bf16")
    assert spec.expr == "x * sigmoid(1.702 * x)"  # recorded in canonical form, not as typed
    again = PackageSpec.from_answers(PackageSpec.for_new_op(spec).answers())
    assert again.ops == (spec,)


def test_matmul_epilogue_and_bias():
    """--epilogue goes through the safe parser over acc (and bias with --bias); the canonical text is
    what the op records, and a plain product records nothing new (older answers stay valid)."""
    plain = OpSpec.create("mm", kind="matmul")
    assert plain.epilogue == "acc" and not plain.bias and not plain.fused
    assert "epilogue" not in plain.record() and "bias" not in plain.record()
    fused = OpSpec.create("mm", kind="matmul", bias=True, epilogue="(acc+bias)*sigmoid(1.702*(acc+bias))")
    assert fused.fused and fused.epilogue == "(acc + bias) * sigmoid(1.702 * (acc + bias))"
    assert fused.record()["epilogue"] == fused.epilogue and fused.record()["bias"] is True
    again = PackageSpec.from_answers(PackageSpec.for_new_op(fused).answers()).ops[0]
    assert again == fused
    assert OpSpec.create("mm", kind="matmul", epilogue="max(acc, 0.0)").fused


@pytest.mark.parametrize("kwargs, fragment", [
    ({"epilogue": "acc + bias"}, "unknown name 'bias' at column 7 in --epilogue; the bias needs --bias"),
    ({"epilogue": "acc", "bias": True}, "--bias is given but --epilogue 'acc' does not use bias"),
    ({"epilogue": "bias * 2", "bias": True}, "does not use acc"),
    ({"epilogue": "x + acc"}, "unknown name 'x'"),
    ({"epilogue": "acc  # __import__('os')"}, "comments are not allowed in --epilogue"),
    ({"epilogue": "open(acc)"}, "unknown function 'open' at column 1 in --epilogue"),
    ({"epilogue": "acc +"}, "--epilogue is not a valid expression: invalid syntax"),
    ({"epilogue": "acc / 0"}, "division by zero in 'acc / 0' at column 1 in --epilogue"),
    ({"epilogue": "acc * \u00e9"}, "--epilogue has the character U+00E9 at column 7"),
    ({"epilogue": "2.0"}, "--epilogue '2.0' uses no input; it must use at least one of: acc"),
    ({"epilogue": "acc * 2", "abi": "full"}, "stable ABI only"),
])
def test_matmul_epilogue_errors(kwargs, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)) as info:
        OpSpec.create("mm", kind="matmul", **kwargs)
    assert "\n" not in str(info.value) and info.value.param in ("epilogue", "bias")


def test_epilogue_is_only_for_matmul():
    with pytest.raises(SpecError, match="only for --kind matmul, not elementwise"):
        OpSpec.create("ew", inputs="x", expr="x", epilogue="acc")
    with pytest.raises(SpecError, match="only for --kind matmul, not rowwise"):
        OpSpec.create("rw", kind="rowwise", inputs="x", bias=True)


def test_recorded_bias_must_be_a_boolean():
    data = PackageSpec.for_new_op(OpSpec.create("mm", kind="matmul", bias=True, epilogue="acc + bias")).answers()
    data["ops"][0]["bias"] = "yes"  # type: ignore[index]
    with pytest.raises(AnswersError, match=r"'bias' must be true or false, not 'yes'"):
        PackageSpec.from_answers(data)


def test_ops_lists_a_fused_matmul_with_its_epilogue(tmp_path):
    from click.testing import CliRunner

    from kernelgen.cli import main
    from kernelgen.render import generate

    op = OpSpec.create("lin", kind="matmul", bias=True, epilogue="max(acc + bias, 0.0)", dtypes="float32")
    root = generate(PackageSpec.for_new_op(op), tmp_path, force=False)
    result = CliRunner().invoke(main, ["ops", str(root)])
    assert result.exit_code == 0, result.output
    assert "C = max(acc + bias, 0.0), acc = A @ B (a, b, bias)" in result.output


def test_float32_and_float64_matmul_products_come_from_the_library():
    """On the stable ABI a matmul op's float32 and float64 products are cuBLAS's (library_product_dtypes), the
    half types' its own kernels'; the full ABI keeps its kernels for every dtype; other kinds have none."""
    assert OpSpec.create("mm", kind="matmul").library_product_dtypes == ["float32", "float64"]
    assert OpSpec.create("mm", kind="matmul", dtypes="float16,float64").library_product_dtypes == ["float64"]
    assert OpSpec.create("mm", kind="matmul", dtypes="bfloat16").library_product_dtypes == []
    assert OpSpec.create("mm", kind="matmul", abi="full").library_product_dtypes == []
    assert OpSpec.create("ew", inputs="x", expr="x * 2").library_product_dtypes == []
