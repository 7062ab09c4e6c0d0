"""Writing a file whole or not at all: the two ways every writer of this package creates files.

* :func:`write_atomic` replaces: the data goes to a unique temporary name beside the target, is
  flushed to disk, then renamed over it, so a reader sees the old file or the new one, never part;
* :func:`write_new` never replaces: the complete temporary file is linked to the target's name, which
  fails when something is there already, even something that appeared a moment before.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _complete_temporary(path: Path, data: bytes) -> str:
    """A temporary file beside ``path`` holding ``data``, flushed to disk, with the mode any new file
    would get (mkstemp makes it 0600); the caller renames or links it, then removes the name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) under a unique temporary name beside ``path``, then rename it
    into place: a reader sees the old file or the new one, never part of one."""
    tmp = _complete_temporary(path, data.encode("utf-8") if isinstance(data, str) else data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_new(path: Path, data: bytes) -> bool:
    """Create ``path`` holding ``data``, whole (linked from a complete temporary file), unless something
    is there already: then nothing is written and False is returned. Never replaces a file, even one
    that appears between a check and the write."""
    tmp = _complete_temporary(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        Path(tmp).unlink(missing_ok=True)
    return True
