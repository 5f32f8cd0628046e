"""The expression sweep's generator (docs/device/sweep.py): reproducible, covering the grammar the
issue names, and every expression a valid op of one package."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from kernelgen.expr import parse

_PATH = Path(__file__).resolve().parent.parent / "docs" / "device" / "sweep.py"
_spec = importlib.util.spec_from_file_location("sweep", _PATH)
assert _spec is not None and _spec.loader is not None
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)


def test_the_expressions_are_reproducible_and_cover_the_grammar():
    first = sweep.expressions(13, 80)
    assert first == sweep.expressions(13, 80)
    assert first != sweep.expressions(14, 80)
    assert len(first) == 80 and sum(item["origin"] == "fixed" for item in first) == len(sweep.FIXED)
    assert {len(item["inputs"]) for item in first} == set(range(1, 9))
    calls = [len(re.findall(r"\b(?:" + "|".join(sweep.UNARY) + r")\(", str(item["expr"]))) for item in first]
    assert min(calls) == 0 and max(calls) >= 6
    text = " ".join(str(item["expr"]) for item in first)
    for token in ("pow(", "**", "max(", "min("):
        assert token in text, token
    for item in first:  # canonical, and every input used (parse would refuse otherwise)
        assert parse(str(item["expr"]), tuple(item["inputs"])).source == item["expr"]


def test_generate_writes_one_package_and_a_manifest(tmp_path):
    root = sweep.generate(tmp_path, seed=13, count=len(sweep.FIXED) + 2)
    manifest = json.loads((tmp_path / "sweep.json").read_text())
    assert manifest["seed"] == 13 and len(manifest["ops"]) == len(sweep.FIXED) + 2
    answers = (root / ".copier-answers.yml").read_text()
    assert "namespace: sweep" in answers
    for op in manifest["ops"]:
        assert (root / "sweep_ops" / "csrc" / op["name"] / "cuda" / f"{op['name']}_kernel.cu").is_file()


def test_registers_are_read_from_a_ptxas_report():
    log = (
        "ptxas info    : Compiling entry function '_ZN2kg11elementwise52_GLOBAL__N__abc_13_e07_kernel_cu_8008115912345676kernelIN3e"
        "0752_GLOBAL__N__abc_13_e07_kernel_cu_8008115912345672OpEfLi4ELi4ELi4EJLm0EEEEvDpPKT0_PS5_l' for 'sm_90'\n"
        "ptxas info    : Function properties for x\n    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 0 barriers\n"
    )
    assert sweep.registers_from_log(log) == {"e07": {"float32/4/4": {"registers": 40, "spill_bytes": 8}}}
    facts = sweep.kernel_facts(sweep.registers_from_log(log)["e07"], "float32", 1)
    assert facts["packs"] == 4 and facts["bytes_in_flight_per_thread"] == 64
    assert sweep.kernel_facts({}, "float16", 1) == {}


def test_occupancy_follows_the_register_allocation():
    # 256-thread blocks on an H100: 65536 registers, at most 2048 threads per SM
    assert sweep.occupancy(32) == 1.0  # 8 blocks
    assert sweep.occupancy(47) == 5 * 256 / 2048  # rounded to 48 per thread: 5 blocks
    assert sweep.occupancy(64) == 0.5
    assert sweep.occupancy(128) == 0.25


def test_no_expression_is_a_bare_input():
    assert all(item["expr"] not in item["inputs"] for item in sweep.expressions(13, 200))


def test_force_packs_patches_every_launcher(tmp_path):
    root = sweep.generate(tmp_path, seed=13, count=len(sweep.FIXED) + 1)
    assert sweep.force_packs(root) == len(sweep.FIXED) + 1
    text = (root / "sweep_ops" / "csrc" / "kernelgen" / "elementwise.cuh").read_text()
    assert 'std::getenv("KG_SWEEP_PACKS")' in text and "Launch::packs<kVec, 4>(in..., out, n, stream);" in text
