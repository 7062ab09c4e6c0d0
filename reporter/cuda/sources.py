"""A CUDA source and the local headers it reaches through ``#include "..."``: where they are
looked for, the one include scanner (:func:`includes`), and the hashes of their texts. The compile
cache key, the records' source closure and the export all read the same list from here."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def include_dirs(path: Path) -> tuple[Path, Path]:
    """Where ``#include "..."`` of a source is looked for, in order: the source's folder (a sibling:
    ``v19_double_q.cu``, ``trace.cuh``) and the folder above it, from which shared headers are named
    by their path (``common/sm90/mbarrier.cuh`` from ``kernels/``). An exported submission places
    shared headers under its own folder by that same path, so the first entry finds them there."""
    folder = Path(path).resolve().parent
    return folder, folder.parent


@dataclass(frozen=True)
class Include:
    """One local header a source reaches: the file, the name it is included by (the path from
    ``root``), and the include folder it was found under."""

    path: Path
    name: str
    root: Path


def includes(path: str | Path) -> list[Include]:
    """Every local header ``path`` reaches through ``#include "..."``, transitively, each once, in
    the order first reached. A name is looked up beside the including file, then in
    :func:`include_dirs` of ``path`` (the preprocessor's order for quoted includes); a name found
    nowhere is a system or NVRTC header and is left out. This is the one include scanner: the
    compile cache key, the records' source closure and the export all use it."""
    main = Path(path).resolve()
    hit = _FOUND.get(main)
    if hit is not None and all(_stat_key(f) == k for f, k in hit[0]):
        return list(hit[1])
    dirs = include_dirs(main)
    out: list[Include] = []
    seen = {main}
    todo = [main]
    while todo:
        cur = todo.pop(0)
        for name in _INCLUDE_RE.findall(cur.read_text(encoding="utf-8")):
            for root in (cur.parent, *dirs):
                q = (root / name).resolve()
                if q.is_file():
                    if q not in seen:
                        seen.add(q)
                        out.append(Include(q, name, root.resolve()))
                        todo.append(q)
                    break
    _FOUND[main] = ([(f, _stat_key(f)) for f in (main, *(i.path for i in out))], tuple(out))
    return out


# what includes() found for a source, with the state of every file it read: valid while none changed
_FOUND: dict[Path, tuple[list[tuple[Path, tuple[int, int] | None]], tuple[Include, ...]]] = {}


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def source_files(path: str | Path) -> list[Path]:
    """The source and every local header it reaches: what a compile of ``path`` reads."""
    main = Path(path).resolve()
    return [main, *(i.path for i in includes(main))]


def source_digest(path: Path) -> str:
    """sha256 over the source and every local header it reaches (by path and content), for the cache key."""
    h = hashlib.sha256()
    for p in source_files(path):
        h.update(str(p).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a source's text, as records and exports state it."""
    return hashlib.sha256(Path(path).read_text(encoding="utf-8").encode()).hexdigest()
