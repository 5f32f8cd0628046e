"""examples/ is exactly what the recorded commands in examples/regenerate.sh produce."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, tree

from kernelgen.cli import main
from kernelgen.record import RECORD, decode_record


def recorded_commands() -> dict[str, list[list[str]]]:
    """Each example directory and the commands that make it, in order."""
    lines = (REPO / "examples" / "regenerate.sh").read_text().splitlines()
    examples: dict[str, list[list[str]]] = {}
    for line in lines:
        if line.startswith("kernelgen new "):
            argv = shlex.split(line)[1:]
            examples[argv[1]] = [argv]
        elif line.startswith("kernelgen add "):
            argv = shlex.split(line)[1:]
            examples[Path(argv[argv.index("--package") + 1]).name].append(argv)
    return examples


def _retarget(argv: list[str], tmp: Path) -> list[str]:
    argv = list(argv)
    for flag in ("--output", "--package"):
        if flag in argv:
            index = argv.index(flag) + 1
            argv[index] = str(tmp / Path(argv[index]).relative_to("examples"))
    return argv


def test_every_example_is_recorded():
    assert sorted(recorded_commands()) == sorted(p.name for p in (REPO / "examples").iterdir() if p.is_dir())


@pytest.mark.parametrize("name", sorted(recorded_commands()))
def test_example_is_byte_exact(tmp_path, name):
    for argv in recorded_commands()[name]:
        result = CliRunner().invoke(main, _retarget(argv, tmp_path), catch_exceptions=False)
        assert result.exit_code == 0, result.output
    fresh, recorded = tree(tmp_path / name), tree(REPO / "examples" / name)
    # The examples' merge records are not committed (.gitignore): 1 MB of gzip a version, which git
    # cannot delta. What a fresh one records is checked instead: exactly the files generated beside it.
    record = decode_record(fresh.pop(RECORD), RECORD)
    recorded.pop(RECORD, None)
    assert record == {rel: data for rel, data in fresh.items() if not rel.startswith(".kernelgen/")}
    assert sorted(fresh) == sorted(recorded), "file lists differ: run examples/regenerate.sh"
    for rel in fresh:
        assert fresh[rel] == recorded[rel], f"{rel} differs from the template output: run examples/regenerate.sh"


# What a generated file must not point at: kernelgen's own history (its stops, its sweeps' seeds and the files of
# its docs), which a user's package does not have. Comments say what the code does and why; how kernelgen got
# there stays in its docs.
_HISTORY = re.compile(r"\b[Ss]tops? \d|\bseeds? \d|\bdocs/(results|backward\.md|benchmarks\.md|design\.md|device)"
                      r"|kernelgen's docs")


@pytest.mark.parametrize("root", ["templates", "examples"])
def test_generated_files_carry_no_history(root):
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()[:120]}"
             for path in sorted((REPO / root).rglob("*")) if path.is_file() and not {"build", "__pycache__"} & set(path.parts)
             and path.suffix not in {".so", ".o", ".pyc", ".whl"}
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             if _HISTORY.search(line)]
    assert not found, "generated text that names kernelgen's history:\n" + "\n".join(found[:20])
