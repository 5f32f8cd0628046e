"""The `kernelgen` command line: a thin layer over the library.

Every user error becomes one line on stderr and a non-zero exit code: 2 for a bad option value
(click.BadParameter / UsageError), 1 for anything else kernelgen refuses. No traceback. An
interrupted run (SIGINT: 130, SIGTERM: 143) says what it had done (:data:`kernelgen.fsutil.OUTCOME`).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from . import api, fsutil
from ._version import __version__
from .errors import KernelgenError, SpecError, did_you_mean
from .fsutil import Terminated, terminate_as_exception
from .spec import (
    ABIS,
    BACKENDS,
    BACKWARDS,
    DEFAULT_ABI,
    DEFAULT_ARCH_LIST,
    DEFAULT_BACKWARD,
    DEFAULT_ROWWISE_EXPR,
    DTYPES,
    EXPR_KINDS,
    KINDS,
    ROWWISE_EXAMPLES,
    TRITON_KINDS,
    OpSpec,
    PackageSpec,
    normalize_op_name,
)

_PARAM_FLAGS = {
    "op_name": "OP_NAME", "kind": "--kind", "inputs": "--inputs", "expr": "--expr",
    "dtypes": "--dtypes", "arch_list": "--arch-list", "namespace": "--namespace", "backend": "--backend",
    "abi": "--abi", "weights": "--weights", "epilogue": "--epilogue", "bias": "--bias", "backward": "--backward",
}


class _Kernelgen(click.Group):
    """The command group: the one place where a command's failure becomes its message and exit
    code. A KernelgenError is one line (a usage error, exit 2, for a bad option value; else exit
    1), and an interrupt anywhere in a command exits with a message that says what was done
    (click alone would print "Aborted!")."""

    def invoke(self, ctx: click.Context) -> Any:
        fsutil.OUTCOME.reset()
        try:
            fsutil.release_startup_signals()  # a Ctrl-C held back since start-up is acted on here
            with terminate_as_exception():
                result = super().invoke(ctx)
                fsutil.raise_pending()  # an interrupt Python could not raise during the command
                return result
        except KernelgenError as err:
            raise _fail(err) from None
        except (KeyboardInterrupt, Terminated) as err:
            _interrupted(err)


@click.group(cls=_Kernelgen, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kernelgen")
def main() -> None:
    """Scaffold PyTorch custom CUDA operators that build, pass their tests and run fast."""


def _interactive(defaults: bool) -> bool:
    return not defaults and sys.stdin.isatty() and sys.stdout.isatty()


def _op_options(func: Any) -> Any:
    """The options that describe one op: shared by `new` and `add`."""
    options = [
        click.option("--kind", type=_Choice(sorted(KINDS)), default=None, help="What kind of op (see `kernelgen list`)."),
        click.option("--backend", type=_Choice(BACKENDS), default=None,
                     help="cuda: a CUDA C++ kernel compiled into the package's _C [default]; triton: a Triton kernel, "
                          "no C++ (elementwise and rowwise)."),
        click.option("--backward", type=_Choice(BACKWARDS), default=None,
                     help="fused: a backward op kernelgen generates from the expression, where it has one "
                          "(elementwise and rowwise, CUDA C++, stable ABI), else the vjp stub [default]; vjp: always the stub "
                          "(the AUTOGRAD STUB in ops/<op>.py: torch.func.vjp of reference()), no backward op."),
        click.option("--inputs", default=None, help="elementwise, rowwise: comma-separated input names, e.g. a,b,c."),
        click.option("--weights", default=None, help="rowwise: comma-separated names of 1-D weights of the row's "
                     "length, e.g. w,b."),
        click.option("--expr", default=None, help='elementwise: scalar expression over the inputs, e.g. "a*b+c"; '
                     'rowwise: also over the weights, with row reductions sum, mean, max, min, e.g. '
                     '"x * rsqrt(mean(x * x) + 1e-6) * w".'),
        click.option("--epilogue", default=None, help='matmul: expression applied to each element of A @ B, over acc '
                     '(the float32 accumulator; float64 for float64) and, with --bias, bias, e.g. '
                     '"acc + bias" or "(acc + bias) * sigmoid(1.702 * (acc + bias))" [default: acc; with --bias, acc + bias].'),
        click.option("--bias", is_flag=True, default=None, help="matmul: the op takes a 1-D bias of N, read by --epilogue as bias."),
        click.option("--dtypes", default=None, help=f"Comma-separated dtypes [default: {','.join(DTYPES)}]."),
        click.option("--arch-list", default=None, help=f"CUDA archs, TORCH_CUDA_ARCH_LIST syntax [default: {DEFAULT_ARCH_LIST}]; one per package."),
        click.option("--namespace", default=None, help="torch.ops namespace [default: the package name]; one per package. "
                     "Namespaces PyTorch owns (aten, prims, sparse, quantized, ...) and names starting with '_' are refused."),
        click.option("--abi", type=_Choice(ABIS), default=None,
                     help=f"LibTorch ABI of the package's C++ [default: {DEFAULT_ABI}]; one per package. stable: "
                          "torch/csrc/stable only, one abi3 binary for every torch >= the target version; full: "
                          "the whole ATen/c10 C++ API, rebuilt for every torch upgrade."),
        click.option("--defaults", is_flag=True, help="Never prompt: use the default for every missing option."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _usage_error(err: SpecError) -> click.UsageError:
    """The error as one line that starts with the option it is about: "--expr: unknown function
    'sigmod' at column 5; did you mean 'sigmoid'?" (the message's own "in --expr" is then said once)."""
    flag = _PARAM_FLAGS.get(err.param or "")
    if not flag or flag == "OP_NAME" or err.message.startswith(flag):
        return click.UsageError(err.message)
    message = re.sub(rf" in {re.escape(flag)}(?=[;:,)]|$)", "", err.message, count=1)
    return click.UsageError(f"{flag}: {message}")


class _Choice(click.Choice):
    """click.Choice whose error names the closest choice: "... is not one of ...; did you mean 'matmul'?"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as err:
            close = did_you_mean(str(value), [str(choice) for choice in self.choices])
            if not close:
                raise
            raise click.BadParameter(err.message.rstrip(".") + close, ctx=ctx, param=param) from None


def _fail(err: KernelgenError) -> click.ClickException:
    return _usage_error(err) if isinstance(err, SpecError) else click.ClickException(err.message)


def _interrupted(err: BaseException) -> NoReturn:
    """Exit after SIGINT or SIGTERM with one line that says what the run had done (never "nothing
    was changed" unless that is true): writes finish or roll back before a signal is acted on."""
    outcome = fsutil.OUTCOME
    outcome.exiting = True
    if outcome.kept is not None:
        message = f"interrupted; some files could not be put back: the originals are in {outcome.kept}"
    elif outcome.applied:
        message = f"interrupted after the writing had finished: {outcome.done}"
    else:
        message = "interrupted; nothing was changed"
    with contextlib.suppress(KeyboardInterrupt, Terminated):  # a second Ctrl-C while this prints
        click.echo(f"kernelgen: {message}", err=True)
    sys.exit(143 if isinstance(err, Terminated) else 130)


#: What each prompt asks for, and its default (a callable of the answers so far, or a string).
_PROMPTS: dict[str, tuple[str, Any]] = {
    "op_name": ("Op name", None),
    "kind": ("Kind (" + "/".join(KINDS) + ")", "elementwise"),
    "inputs": ("Input tensors (comma-separated)", "x"),
    "weights": ("1-D weights (comma-separated, or none)", ""),
    "expr": ("Expression", lambda answers: " + ".join(n.strip() for n in (answers["inputs"] or "x").split(","))),
    "rowwise_expr": ("Expression (with sum, mean, max, min over the row)", DEFAULT_ROWWISE_EXPR),
    "dtypes": ("Dtypes", ",".join(DTYPES)),
    "arch_list": ("CUDA arch list", DEFAULT_ARCH_LIST),
}
#: The fields whose errors an answer can cause besides its own: a kind clashes with --backend, --abi,
#: --weights, --epilogue, --bias, --inputs or --expr; an op name or a weight with an input's name; an
#: expression is checked against the inputs and weights, and the kind.
_CAUSES: dict[str, tuple[str, ...]] = {
    "op_name": ("inputs",),
    "kind": ("backend", "abi", "weights", "epilogue", "bias", "inputs", "expr"),
    "inputs": ("weights", "expr"),
    "weights": ("inputs", "expr"),
}


def _collect_op(
    op_name: str | None, kind: str | None, inputs: str | None, expr: str | None, dtypes: str | None,
    arch_list: str | None, namespace: str | None, defaults: bool, backend: str | None = None,
    abi: str | None = None, weights: str | None = None, *, epilogue: str | None = None, bias: bool | None = None,
    backward: str | None = None, check: Callable[[OpSpec], object] | None = None,
) -> OpSpec:
    """Prompt for what is missing (on a terminal) and validate everything into an OpSpec.

    On a terminal each answer is checked as soon as it is given, by the code that checks the
    options (OpSpec.create, with the answers before it and the options; ``check`` adds the
    package's rules, for `add`), and a bad one is asked again with the error line, so that a typo
    costs none of the answers before it. Options given on the command line are checked before the
    first prompt that does not need them.
    """
    interactive = _interactive(defaults)
    answers: dict[str, str | None] = {"op_name": op_name, "kind": kind, "inputs": inputs, "weights": weights,
                                      "expr": expr, "dtypes": dtypes, "arch_list": arch_list}
    given = {field for field, value in answers.items() if value is not None}

    def build(values: dict[str, str | None]) -> OpSpec:
        # An option given as "" is an error (caught by the parsers), never a silent default. Without
        # --kind the kind is elementwise; on a terminal, until it is asked, the kind the options point to.
        unasked_kind = _placeholder_kind(weights, epilogue, bias) if interactive else "elementwise"
        op = OpSpec.create(
            values["op_name"] or "", kind=values["kind"] or unasked_kind,
            inputs=values["inputs"], expr=values["expr"],
            dtypes=values["dtypes"] if values["dtypes"] is not None else ",".join(DTYPES),
            arch_list=values["arch_list"] if values["arch_list"] is not None else DEFAULT_ARCH_LIST,
            namespace=namespace, backend=backend or "cuda", abi=abi or DEFAULT_ABI, weights=values["weights"],
            epilogue=epilogue, bias=bool(bias), backward=backward or DEFAULT_BACKWARD,
        )
        if check is not None:
            check(op)
        return op

    def pending() -> set[str]:
        """The fields still to be asked: those with no value that the kind asks for."""
        if not interactive:
            return set()
        kind_now = answers["kind"]
        fields = {"op_name", "kind", "dtypes", "arch_list"}
        if kind_now in (None, *EXPR_KINDS):
            fields |= {"inputs", "expr"} | ({"weights"} if kind_now in (None, "rowwise") else set())
        return {field for field in fields if answers[field] is None}

    def ask(field: str) -> None:
        if answers[field] is not None or not interactive:
            return
        label, default = _PROMPTS["rowwise_expr" if field == "expr" and answers["kind"] == "rowwise" else field]
        # The errors this answer is to blame for: its own field's, and those it can cause in a field that
        # has its value, unless a field still to be asked can cause them too (it holds a placeholder
        # until then: an --expr over a, b fails on the placeholder input x while the inputs are unasked).
        later = pending() - {field}
        blame = {field} | {other for other in _CAUSES.get(field, ()) if other not in later and not any(
            other in _CAUSES.get(unasked, ()) for unasked in later)}

        def validate(text: str) -> str:
            if field == "weights" and text.strip().lower() == "none":
                text = ""
            try:
                if field == "op_name":
                    normalize_op_name(text)
                build({**answers, field: text})
            except SpecError as err:
                if err.param in blame:
                    raise click.UsageError(_usage_error(err).message) from None
            return text

        answers[field] = click.prompt(label, default=default(answers) if callable(default) else default,
                                      value_proc=validate)

    if op_name is None:
        if not interactive:
            raise click.UsageError("missing OP_NAME (and no terminal to ask for it)")
        ask("op_name")
    op_name = answers["op_name"] or ""
    identifier = normalize_op_name(op_name)
    if identifier != op_name:
        click.echo(f"note: op name {op_name!r} becomes {identifier!r} for the Python package and C++ identifiers", err=True)
    if interactive:  # a bad option fails now, not after the questions
        try:
            build(answers)
        except SpecError as err:
            unsettled = pending()
            if not any(err.param == field or err.param in _CAUSES.get(field, ()) for field in unsettled):
                raise
    for field in ("kind", "inputs", "weights", "expr", "dtypes", "arch_list"):
        if field in pending():
            ask(field)
    while True:
        try:
            return build(answers)
        except SpecError as err:
            # A rule that ties two answers together, caught only now: ask the one it names again.
            if err.param not in given and err.param in answers and interactive:
                click.echo(f"Error: {_usage_error(err).message}", err=True)
                answers[err.param] = None
                ask(err.param)
                continue
            raise


def _placeholder_kind(weights: str | None, epilogue: str | None, bias: bool | None) -> str:
    """The kind to check the answers before the kind is asked: the one the options point to."""
    if weights:
        return "rowwise"
    return "matmul" if epilogue is not None or bias else "elementwise"


@main.command()
@click.argument("op_name", required=False)
@_op_options
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True, help="Directory to create the package directory in.")
@click.option("--force", is_flag=True, help="Write into an existing non-empty directory (other files are kept; replaced files are backed up in .kernelgen/backup/).")
@click.option("--answers", "answers_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Regenerate a package from a recorded .copier-answers.yml.")
@click.option("--op", "first_op", default=None, help="Name of the package's first op [default: NAME]: `kernelgen new myteam-ops --op muladd ...`.")
def new(
    op_name: str | None, kind: str | None, backend: str | None, backward: str | None, inputs: str | None,
    weights: str | None,
    expr: str | None, epilogue: str | None, bias: bool | None, dtypes: str | None, arch_list: str | None,
    namespace: str | None, abi: str | None, output: Path, force: bool, defaults: bool, answers_file: Path | None,
    first_op: str | None,
) -> None:
    """Generate a package in OUTPUT/NAME holding one op (NAME, or --op); grow it with `kernelgen add`.

    The torch.ops namespace is --namespace, or else the op name; either way it must not be one
    that PyTorch itself registers (aten, prims, sparse, quantized, profiler, ...: importing such
    a package would abort Python), nor start with '_'. `kernelgen new sparse --namespace myteam`
    is fine.

    The C++ uses LibTorch's stable ABI (--abi stable, the default): one abi3 binary that loads on
    every later torch. --abi full writes it against ATen instead, for ops that need C++ API the
    stable ABI lacks, at the price of a rebuild on every torch upgrade.

    \b
    Example:
      kernelgen new fused-gelu --inputs x --expr "x * sigmoid(1.702 * x)"
      cd fused-gelu && pip install --no-build-isolation -e . && pytest
    """
    started = time.perf_counter()
    if answers_file is not None:
        if any(value is not None for value in (op_name, kind, backend, backward, inputs, weights, expr, epilogue,
                                               bias, dtypes, arch_list, namespace, abi, first_op)):
            raise click.UsageError("--answers regenerates a whole package: give no OP_NAME or op options with it")
        pkg = api.read_answers(answers_file)
    elif first_op is None:
        pkg = PackageSpec.for_new_op(_collect_op(op_name, kind, inputs, expr, dtypes, arch_list, namespace, defaults,
                                                 backend, abi, weights, epilogue=epilogue, bias=bias,
                                                 backward=backward))
    else:
        if op_name is None:
            raise click.UsageError("missing NAME (the package's name; --op names its first op)")
        op = _collect_op(first_op, kind, inputs, expr, dtypes, arch_list, PackageSpec.namespace_for(op_name, namespace),
                         defaults, backend, abi, weights, epilogue=epilogue, bias=bias, backward=backward)
        pkg = PackageSpec.for_new_op(op, name=op_name)
    fsutil.OUTCOME.done = f"the package {pkg.name} was written"
    result = api.new(pkg, output, force=force)
    for note in result.notes:
        click.echo(note, err=True)
    elapsed = time.perf_counter() - started
    where = _display(result.path)
    ops = ", ".join(f"{pkg.namespace}::{op.op_name} ({op.kind})" for op in pkg.ops)
    click.echo(f"created {where}: {ops} in {elapsed:.2f} s")
    click.echo(f"next: cd {where} && pip install --no-build-isolation -e . && pytest -q")


@main.command()
@click.argument("op_name", required=False)
@_op_options
@click.option("--package", "package_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True, help="The kernelgen package to add the op to.")
@click.option("--dry-run", is_flag=True, help="Show what would change and write nothing.")
def add(
    op_name: str | None, kind: str | None, backend: str | None, backward: str | None, inputs: str | None,
    weights: str | None,
    expr: str | None, epilogue: str | None, bias: bool | None,
    dtypes: str | None, arch_list: str | None, namespace: str | None, abi: str | None, defaults: bool,
    package_dir: Path, dry_run: bool,
) -> None:
    """Add the op OP_NAME to the package in --package (default: the current directory).

    The op gets csrc/<op>/, ops/<op>.py, tests/test_<op>.py and benchmarks/bench_<op>.py, and is
    registered as torch.ops.<namespace>.<op> in the package's one build, on the package's ABI. The package's shared
    files (README, __init__.py, ...) are re-rendered and merged with your edits; on a conflict, or
    any other failure, nothing is written.
    """
    root = package_dir.expanduser().resolve()
    recorded = api.load_package(root).spec
    recorded.check_settings(namespace=namespace, arch_list=arch_list, abi=abi)
    op = _collect_op(op_name, kind, inputs, expr, dtypes, recorded.arch_list, recorded.namespace, defaults,
                     backend, recorded.abi, weights, epilogue=epilogue, bias=bias, backward=backward,
                     check=recorded.with_op)
    fsutil.OUTCOME.done = f"the op {op.op_name} was added to {_display(root)}"
    result = api.add(op, root, dry_run=dry_run, show_plan=_print_changes)
    verb = "would add" if dry_run else "added"
    click.echo(f"{verb} {result.package.namespace}::{op.op_name} ({op.kind}) to {_display(result.path)}; "
               f"the package has {len(result.package.ops)} ops: {', '.join(o.op_name for o in result.package.ops)}")
    if not dry_run:
        click.echo(f"next: pip install --no-build-isolation -e {_display(result.path)} && pytest -q "
                   f"{_display(result.path / 'tests' / f'test_{op.op_name}.py')}")


@main.command(name="ops")
@click.argument("package_dir", required=False, type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_ops(package_dir: Path, as_json: bool) -> None:
    """List the ops of the package in PACKAGE_DIR (default: the current directory)."""
    info = api.load_package(package_dir)
    if as_json:
        click.echo(json.dumps(info.as_dict(), indent=2))
        return
    pkg = info.spec
    click.echo(f"{pkg.package} (namespace {pkg.namespace}, arch list {pkg.arch_list}, {pkg.abi} ABI): "
               f"{len(pkg.ops)} op(s)")
    for op in pkg.ops:
        columns = ", ".join(op.inputs) + (f"; weights {', '.join(op.weights)}" if op.weights else "")
        if op.kind in EXPR_KINDS:
            detail = f"{columns} -> {op.expr}"
        elif op.fused:
            detail = f"C = {op.epilogue}, acc = A @ B" + (" (a, b, bias)" if op.bias else "")
        else:
            detail = "C = A @ B"
        click.echo(f"  torch.ops.{pkg.namespace}.{op.op_name:<20} {op.kind:<12} {detail}   [{', '.join(op.dtypes)}]")


def _print_changes(result: api.Result, with_diffs: bool = False) -> None:
    """One line per planned change (`add`, `update`), and its diff (on a dry run) ``with_diffs``."""
    for change in result.changes:
        note = f"  ({change.note})" if change.note else ""
        click.echo(f"{change.action:<9} {change.path}{note}")
        if with_diffs and change.diff:
            click.echo(change.diff, nl=False)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@main.command()
@click.argument("op_dir", required=False, type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--dry-run", is_flag=True, help="Show what would change (with diffs) and write nothing.")
@click.option("--rebuild-record", is_flag=True, help="Re-create a missing .kernelgen/generated.json.gz from the recorded answers (writes only there).")
def update(op_dir: Path, dry_run: bool, rebuild_record: bool) -> None:
    """Re-render the package in OP_DIR with the current templates, keeping your edits (3-way merge).

    Files edited on both sides get conflict markers; the command then exits 1 and lists them.
    Nothing is written when the package is up to date, and nothing is ever written outside it.
    """
    if rebuild_record:
        fsutil.OUTCOME.done = f"the record of {_display(op_dir)} was rebuilt"
        written = api.rebuild_record(op_dir)
        click.echo(f"wrote {_display(written)}; now run: kernelgen update {_display(op_dir)}")
        return
    fsutil.OUTCOME.done = f"{_display(op_dir.expanduser().resolve())} was updated"
    result = api.update(op_dir, dry_run=dry_run, show_plan=_show_update)
    if result.orphaned:
        click.echo(f"warning: {len(result.orphaned)} file(s) you edited are no longer built: "
                   f"{', '.join(result.orphaned)}; move your changes into the files listed as added or updated, "
                   "then delete them", err=True)
    if result.conflicts:
        verb = "would conflict" if dry_run else "have conflict markers to resolve"
        click.echo(f"error: {len(result.conflicts)} file(s) {verb}: {', '.join(result.conflicts)}", err=True)
        sys.exit(1)


def _show_update(result: api.Result) -> None:
    _print_changes(result, with_diffs=True)
    if not result.changes:
        click.echo(f"{_display(result.path)} is up to date with the templates")


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
    click.echo("\nrowwise expressions (--kind rowwise --inputs ... [--weights ...] --expr ...):")
    for label, inputs, weights, expression in ROWWISE_EXAMPLES:
        options = f"--inputs {inputs}" + (f" --weights {weights}" if weights else "")
        click.echo(f"  {label:<12} {options:<28} --expr \"{expression}\"")
    click.echo(f"\nbackends: cuda (CUDA C++, every kind), triton (Triton, no C++: {', '.join(TRITON_KINDS)}); --backend")
    click.echo("\nevery op gets: csrc/<op>.cpp (schema, checks, CPU), csrc/cuda/<op>_cuda.cpp (CUDA tensor side),")
    click.echo("csrc/cuda/<op>_kernel.cu (kernel),")
    click.echo("ops.py (register_fake, register_autograd), setup.py, tests/, benchmarks/, README.md")


if __name__ == "__main__":  # pragma: no cover
    main()
