"""The `kernelgen` command line: a thin layer over the library.

Every user error becomes one line on stderr and a non-zero exit code: 2 for a bad option value
(click.BadParameter / UsageError), 1 for anything else kernelgen refuses. No traceback.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import KernelgenError, SpecError
from .spec import DEFAULT_ARCH_LIST, DTYPES, KINDS, OpSpec, normalize_op_name

_PARAM_FLAGS = {
    "op_name": "OP_NAME", "kind": "--kind", "inputs": "--inputs", "expr": "--expr",
    "dtypes": "--dtypes", "arch_list": "--arch-list", "namespace": "--namespace",
}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kernelgen")
def main() -> None:
    """Scaffold PyTorch custom CUDA operators that build, pass their tests and run fast."""


def _interactive(defaults: bool) -> bool:
    return not defaults and sys.stdin.isatty() and sys.stdout.isatty()


def _ask(value: Any, prompt: str, default: str, interactive: bool) -> Any:
    if value is not None or not interactive:
        return value
    return click.prompt(prompt, default=default)


@main.command()
@click.argument("op_name", required=False)
@click.option("--kind", type=click.Choice(sorted(KINDS)), default=None, help="What kind of op (see `kernelgen list`).")
@click.option("--inputs", default=None, help="elementwise: comma-separated input names, e.g. a,b,c.")
@click.option("--expr", default=None, help='elementwise: scalar expression over the inputs, e.g. "a*b+c".')
@click.option("--dtypes", default=None, help=f"Comma-separated dtypes [default: {','.join(DTYPES)}].")
@click.option("--arch-list", default=None, help=f"CUDA archs, TORCH_CUDA_ARCH_LIST syntax [default: {DEFAULT_ARCH_LIST}].")
@click.option("--namespace", default=None, help="torch.ops namespace [default: the op name].")
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True, help="Directory to create the op directory in.")
@click.option("--force", is_flag=True, help="Write into an existing non-empty directory (other files are kept).")
@click.option("--defaults", is_flag=True, help="Never prompt: use the default for every missing option.")
@click.option("--answers", "answers_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Regenerate from a recorded .copier-answers.yml.")
def new(
    op_name: str | None, kind: str | None, inputs: str | None, expr: str | None,
    dtypes: str | None, arch_list: str | None, namespace: str | None, output: Path,
    force: bool, defaults: bool, answers_file: Path | None,
) -> None:
    """Generate a complete op package in OUTPUT/OP_NAME.

    \b
    Example:
      kernelgen new fused-gelu --inputs x --expr "x * sigmoid(1.702 * x)"
      cd fused-gelu && pip install --no-build-isolation -e . && pytest
    """
    started = time.perf_counter()
    try:
        if answers_file is not None:
            from .update import load_answers

            recorded = load_answers(answers_file)
            op_name = op_name or recorded["name"]
            kind = kind or recorded["kind"]
            inputs = inputs if inputs is not None else _join(recorded.get("inputs"))
            expr = expr if expr is not None else recorded.get("expr")
            dtypes = dtypes or _join(recorded.get("dtypes"))
            arch_list = arch_list or recorded.get("arch_list")
            namespace = namespace or recorded.get("namespace")
        interactive = _interactive(defaults)
        if op_name is None:
            if not interactive:
                raise click.UsageError("missing OP_NAME (and no terminal to ask for it)")
            op_name = click.prompt("Op name")
        identifier = normalize_op_name(op_name)
        if identifier != op_name:
            click.echo(f"note: op name {op_name!r} becomes {identifier!r} for the Python package and C++ identifiers", err=True)
        kind = _ask(kind, "Kind (" + "/".join(KINDS) + ")", "elementwise", interactive) or "elementwise"
        if kind == "elementwise":
            inputs = _ask(inputs, "Input tensors (comma-separated)", "x", interactive)
            default_expr = " + ".join(n.strip() for n in (inputs or "x").split(","))
            expr = _ask(expr, "Expression", default_expr, interactive)
        dtypes = _ask(dtypes, "Dtypes", ",".join(DTYPES), interactive)
        arch_list = _ask(arch_list, "CUDA arch list", DEFAULT_ARCH_LIST, interactive)
        spec = OpSpec.create(
            op_name, kind=kind, inputs=inputs, expr=expr,
            dtypes=dtypes or ",".join(DTYPES), arch_list=arch_list or DEFAULT_ARCH_LIST,
            namespace=namespace,
        )
        from .render import generate

        dest = generate(spec, output, force=force)
    except SpecError as err:
        flag = _PARAM_FLAGS.get(err.param or "")
        raise click.UsageError(f"{flag}: {err.message}" if flag and flag != "OP_NAME" else err.message) from None
    except KernelgenError as err:
        raise click.ClickException(err.message) from None
    elapsed = time.perf_counter() - started
    where = _display(dest)
    click.echo(f"created {where} ({spec.kind} op {spec.namespace}::{spec.op_name}) in {elapsed:.2f} s")
    click.echo(f"next: cd {where} && pip install --no-build-isolation -e . && pytest -q")


def _join(value: Any) -> str | None:
    if value is None:
        return None
    return ",".join(value) if isinstance(value, (list, tuple)) else str(value)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@main.command()
@click.argument("op_dir", required=False, type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--dry-run", is_flag=True, help="Show what would change (with diffs) and write nothing.")
def update(op_dir: Path, dry_run: bool) -> None:
    """Re-render OP_DIR with the current templates, keeping your edits (3-way merge).

    Files edited on both sides get conflict markers; the command then exits 1 and lists them.
    """
    from .update import apply, diff, plan

    try:
        result, theirs, _ = plan(op_dir)
        for item in result.changes:
            note = f"  ({item.note})" if item.note else ""
            click.echo(f"{item.action:<9} {item.path}{note}")
            if dry_run and item.action not in ("skipped", "orphaned"):
                click.echo(diff(result, item), nl=False)
        if not result.changes:
            click.echo(f"{_display(result.op_dir)} is up to date with the templates")
        if not dry_run:
            apply(result, theirs)
    except KernelgenError as err:
        raise click.ClickException(err.message) from None
    if result.orphaned:
        click.echo(f"warning: {len(result.orphaned)} file(s) you edited are no longer built: "
                   f"{', '.join(result.orphaned)}; move your changes into the files listed as added or updated, "
                   "then delete them", err=True)
    if result.conflicts:
        verb = "would conflict" if dry_run else "have conflict markers to resolve"
        click.echo(f"error: {len(result.conflicts)} file(s) {verb}: {', '.join(result.conflicts)}", err=True)
        sys.exit(1)


@main.command()
@click.option("--op", "op_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Also check that this op's arch list covers the visible GPU.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def doctor(op_dir: Path | None, as_json: bool) -> None:
    """Check the toolchain (Python, torch, nvcc, CUDA_HOME, ninja, C++, GPU) and say how to fix it."""
    from .doctor import FAIL, format_checks, run_checks, to_json

    checks = run_checks(op_dir=op_dir)
    click.echo(to_json(checks) if as_json else format_checks(checks))
    if any(check.status == FAIL for check in checks):
        sys.exit(1)


@main.command(name="list")
def list_kinds() -> None:
    """Show the kinds of op kernelgen generates."""
    for kind, description in KINDS.items():
        click.echo(f"{kind:<12} {description}")
    click.echo("\nevery op gets: csrc/<op>.cpp (schema, checks, CPU), csrc/cuda/<op>_cuda.cpp (CUDA tensor side),")
    click.echo("csrc/cuda/<op>_kernel.cu (kernel),")
    click.echo("ops.py (register_fake, register_autograd), setup.py, tests/, benchmarks/, README.md")


if __name__ == "__main__":  # pragma: no cover
    main()
