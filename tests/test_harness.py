"""The generated benchmark harness (examples/muladd/benchmarks/harness.py, golden): how a case is timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

HARNESS = Path(__file__).resolve().parents[1] / "examples/muladd/benchmarks/harness.py"


def load_harness():
    spec = importlib.util.spec_from_file_location("kg_harness_under_test", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_rounds_are_interleaved_and_each_implementation_keeps_its_fastest(monkeypatch):
    harness = load_harness()
    # Scripted timings per implementation, one per round: a slow spell hits "op" in round 0 and
    # "eager" in round 1; the roofline is slowest in the last round.
    script = {"op": [8.0, 1.0, 1.1], "eager": [2.0, 9.0, 2.2], "copy": [0.5, 0.6, 0.9]}
    order = []

    def fake_timer(fn):
        name = fn()
        order.append(name)
        return script[name][sum(1 for n in order if n == name) - 1]

    monkeypatch.setattr(harness, "time_cpu", fake_timer)
    case = harness.Case(dtype="float32", size=4, shape="4", amount=1e9, unit="GB/s",
                        impls={"op": lambda: "op", "eager": lambda: "eager"},
                        roofline=("copy", 2e9, lambda: "copy"))
    row = harness.measure(case, torch.device("cpu"), rounds=3)
    assert order == ["op", "eager", "copy"] * 3
    assert row.seconds == {"op": 1.0, "eager": 2.0}
    assert row.throughput == {"op": 1.0, "eager": 0.5}
    assert row.roofline_name == "copy" and row.roofline_throughput == 4.0


def test_rounds_option_reaches_measure():
    harness = load_harness()
    assert harness.parse_args("x", []).rounds == 3
    assert harness.parse_args("x", ["--rounds", "1"]).rounds == 1
