"""Read a recorded answers file (``.copier-answers.yml``) defensively.

An answers file comes from a checkout the user may not have written (a cloned repository), or from
``--answers PATH``, which may name anything. So: regular files only (never a FIFO, which would
hang, or ``/dev/zero``, which would read forever), at most :data:`MAX_BYTES`, UTF-8, YAML that is
a mapping. The YAML is read with no aliases (``*a``: a few hundred bytes of nested aliases expand
to gigabytes), no merge keys and no duplicate keys (the last of two ``name:`` lines would win
silently), and every field must be a scalar or a list of scalars (``ops``: a list of mappings of
those), so what is read is never larger than the file. The type of every field is checked by
:meth:`kernelgen.spec.PackageSpec.from_answers`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import AnswersError

#: The answers file of a package: what the user chose, recorded by copier at the package's root.
ANSWERS_FILE = ".copier-answers.yml"
#: A real answers file is well under 4 KiB; a package with a hundred ops stays under this.
MAX_BYTES = 256 * 1024


class _Refused(Exception):
    """A YAML construct kernelgen's answers files never use (raised while loading)."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.line = mark.line + 1 if mark is not None else None


class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader without aliases, merge keys or duplicate keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _Refused(f"uses the YAML alias *{event.anchor}, which kernelgen answers files never hold",
                           event.start_mark)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _Refused("uses a YAML merge key (<<), which kernelgen answers files never hold", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: SafeLoader reports it
                break
            if duplicate:
                raise _Refused(f"has the key {_clip(key)} twice (which one counts?); keep one", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _clip(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return ascii(text if len(text) <= limit else text[: limit - 3] + "...")[1:-1]


def _is_flat(value: Any) -> bool:
    """A scalar, or a list of scalars (dates and times count as scalars)."""
    if isinstance(value, list):
        return all(not isinstance(item, (list, dict)) for item in value)
    return not isinstance(value, dict)


def _check_shape(data: dict[str, Any], path: Path | str) -> None:
    """Every field a scalar or a list of scalars; ``ops`` a list of mappings of those."""
    for key, value in data.items():
        if key == "ops" and isinstance(value, list):
            for index, op in enumerate(value):
                if not isinstance(op, dict):
                    continue  # PackageSpec.from_answers says what an op must be
                for field, item in op.items():
                    if not _is_flat(item):
                        raise AnswersError(f"answers file {path}: {_clip(field)} of ops[{index}] must be a scalar "
                                           "or a list of scalars, not a list of lists or a mapping")
        elif not _is_flat(value):
            raise AnswersError(f"answers file {path}: {_clip(key)} must be a scalar or a list of scalars, "
                               "not a list of lists or a mapping")


def parse_answers(text: str, path: Path | str) -> dict[str, Any]:
    """The mapping recorded in the YAML ``text`` (from ``path``); raises :class:`AnswersError`."""
    if "\x00" in text:
        raise AnswersError(f"answers file {path} holds a NUL byte: it is not a text file")
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader, stricter still
    except _Refused as err:
        where = f" (line {err.line})" if err.line is not None else ""
        raise AnswersError(f"answers file {path}{where} {err.message}") from None
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise AnswersError(f"answers file {path} is not valid YAML: {first}") from None
    except RecursionError:
        raise AnswersError(f"answers file {path} is nested too deeply") from None
    if not isinstance(data, dict) or "name" not in data:
        raise AnswersError(f"{path} is not a kernelgen answers file (no 'name')")
    if not all(isinstance(key, str) for key in data):
        raise AnswersError(f"{path} is not a kernelgen answers file (a key is not a string)")
    _check_shape(data, path)
    return data


def load_answers(path: Path) -> dict[str, Any]:
    """The mapping recorded in ``path``; raises :class:`AnswersError` with one line otherwise."""
    try:
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise AnswersError(f"{path} not found: is this a directory generated by kernelgen?") from None
    except OSError as err:
        raise AnswersError(f"cannot read answers file {path}: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AnswersError(f"answers file {path} is not a regular file")
        if info.st_size > MAX_BYTES:
            raise AnswersError(f"answers file {path} is {info.st_size} bytes; the limit is {MAX_BYTES}")
        raw = os.read(fd, MAX_BYTES + 1)
    except OSError as err:
        raise AnswersError(f"cannot read answers file {path}: {err.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        raise AnswersError(f"answers file {path} is larger than {MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AnswersError(f"answers file {path} is not UTF-8 text (byte {err.start})") from None
    return parse_answers(text, path)
