"""The README starts with the two commands the brief asks for, and CI runs the second one."""

from __future__ import annotations

from conftest import REPO


def test_readme_commands_match_ci():
    readme = (REPO / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    generate, test = commands
    assert "kernelgen new" in generate and "pip install --no-build-isolation -e ." in generate and "pytest" in generate
    assert test == "bash tests/run.sh"
    assert "exec bash tests/run.sh" in (REPO / ".ci" / "run").read_text()
