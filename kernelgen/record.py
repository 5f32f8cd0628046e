"""The merge ancestor of a package: ``.kernelgen/generated.json.gz``, the exact text of every file
kernelgen generated, recorded compactly beside the package rather than as a second copy of the
sources (grep, code search, linters and review tools skip it as binary). `kernelgen update` and
`kernelgen add` merge the user's edits and the current templates against it (:mod:`kernelgen.merge`).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from .errors import RenderError

#: The exact output of the templates for the recorded answers: the common ancestor that
#: `kernelgen update` and `kernelgen add` merge the user's edits and the current templates against.
RECORD = ".kernelgen/generated.json.gz"
RECORD_README = ".kernelgen/README.md"
#: Template versions 1 and 2 kept the ancestor as a full copy of every file in this directory.
LEGACY_BASE_DIR = ".kernelgen/base"
_RECORD_FORMAT = 1
_RECORD_README_TEXT = """\
# .kernelgen/

`generated.json.gz` records exactly what kernelgen generated for this package (the template
version is in `../.copier-answers.yml`). `kernelgen update` and `kernelgen add` use it as the
common ancestor of a 3-way merge between your edits and the current templates, and refresh it.
It is compressed so that it is not a second copy of the sources for grep, code search, linters
or review. Do not edit it; do commit it. `backup/` (if present) holds files `--force` replaced.
"""


def encode_record(files: dict[str, bytes]) -> bytes:
    """The compact ancestor record: gzip'd JSON of every generated file, reproducible byte for byte."""
    data = {
        "format": _RECORD_FORMAT,
        "files": {rel: files[rel].decode("utf-8", "surrogateescape") for rel in sorted(files)},
    }
    text = json.dumps(data, indent=0, sort_keys=True, ensure_ascii=True)
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


#: The most a record may expand to: 12 ops make 0.7 MB, so this fits hundreds of ops, and a damaged
#: or hostile record (a gzip bomb) costs at most this much memory and time.
MAX_RECORD_BYTES = 64 * 1024 * 1024


def read_record(path: Path) -> bytes:
    """The bytes of a record file, read only up to the size any real record has."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read(MAX_RECORD_BYTES + 1)
    except OSError as err:
        raise RenderError(f"cannot read {path}: {err.strerror}") from None
    if len(blob) > MAX_RECORD_BYTES:
        raise RenderError(f"{path} is larger than {MAX_RECORD_BYTES >> 20} MiB: it is not a kernelgen record; "
                          "restore it from version control")
    return blob


def decode_record(blob: bytes, where: str) -> dict[str, bytes]:
    """The files recorded in ``blob``; decompressed with a size cap (:data:`MAX_RECORD_BYTES`)."""
    try:
        inflate = zlib.decompressobj(wbits=31)  # gzip, one member
        raw = inflate.decompress(blob, MAX_RECORD_BYTES + 1)
        if len(raw) > MAX_RECORD_BYTES:
            raise RenderError(f"{where} expands to more than {MAX_RECORD_BYTES >> 20} MiB: it is not a kernelgen "
                              "record; restore it from version control")
        if not inflate.eof or inflate.unused_data:
            raise ValueError("truncated" if not inflate.eof else "data after the end")
        data = json.loads(raw.decode("ascii"))
        if not isinstance(data, dict) or data.get("format") != _RECORD_FORMAT or not isinstance(data.get("files"), dict):
            raise ValueError("unknown format")
        return {str(rel): str(text).encode("utf-8", "surrogateescape") for rel, text in data["files"].items()}
    except (zlib.error, ValueError, AttributeError, UnicodeError, RecursionError) as err:
        raise RenderError(f"{where} is damaged ({err}); restore it from version control") from None


def with_record(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` plus the ancestor record of them and its README."""
    return {**files, RECORD: encode_record(files), RECORD_README: _RECORD_README_TEXT.encode()}
