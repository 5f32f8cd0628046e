"""examples/ is exactly what the recorded commands in examples/regenerate.sh produce."""

from __future__ import annotations

import shlex

import pytest
from click.testing import CliRunner
from conftest import REPO, tree

from kernelgen.cli import main


def recorded_commands() -> list[list[str]]:
    lines = (REPO / "examples" / "regenerate.sh").read_text().splitlines()
    return [shlex.split(line)[1:] for line in lines if line.startswith("kernelgen new ")]


@pytest.mark.parametrize("argv", recorded_commands(), ids=lambda argv: argv[1])
def test_example_is_byte_exact(tmp_path, argv):
    out_index = argv.index("--output") + 1
    name = argv[1]
    example = REPO / argv[out_index] / name
    argv = list(argv)
    argv[out_index] = str(tmp_path)
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    fresh, recorded = tree(tmp_path / name), tree(example)
    assert sorted(fresh) == sorted(recorded), "file lists differ: run examples/regenerate.sh"
    for rel in fresh:
        assert fresh[rel] == recorded[rel], f"{rel} differs from the template output: run examples/regenerate.sh"
