"""Writing an output the user named (``diff -o``, ``export -o``, ``build -o``): only ever a regular file.

The rule, the same for every command:

* a target that does not exist is created (whole or not at all, :func:`reporter.atomic.write_atomic`);
* a target that exists and is a symbolic link, a directory, a FIFO, a socket or a device is refused,
  ``--force`` or not: replacing it would replace the link (not what it points to) or turn a device
  into a regular file, and reading it to compare could block or never end. It is never read;
* a regular file whose bytes are identical to the new output is rewritten (the same bytes) without
  asking: the tool wrote it, or wrote the same thing;
* any other regular file is replaced only with ``force`` (the command's ``--force``): the tool cannot
  tell its own earlier output from the user's file, so it does not guess.

An existing file is read at most one byte beyond the new output's length (``slack`` more where the
caller compares loosely, as ``export`` ignoring its date line), so a huge file costs no memory.

Files a command names itself inside a folder the user gave (``build -o DIR`` writes ``DIR/worklog.html``
and ``DIR/worklog.pdf``, and replaces them each build) go through :func:`check_target` only: the
first two points hold, the ``force`` point does not (the folder is the report's).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .atomic import write_atomic


class OutputError(Exception):
    """An output that is not written: one line naming the path."""


def _kind(mode: int) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "not a regular file")


def _reason(e: OSError) -> str:
    if isinstance(e, (FileExistsError, NotADirectoryError)):
        return "a part of the path is a file, not a folder"
    return str(e.strerror or e)


def check_target(path: Path) -> bool:
    """Whether ``path`` exists (as a regular file); :class:`OutputError` when it is there and is not a
    regular file, or is a symbolic link. Nothing is opened or read."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise OutputError(f"{path}: cannot write: a part of the path is a file, not a folder") from None
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_reason(e)}") from e
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: is {_kind(st.st_mode)}, not a regular file: not replaced")
    return True


def read_existing(path: Path, limit: int) -> bytes | None:
    """The first ``limit`` bytes at most of the regular file at ``path``, or None where nothing is there;
    :class:`OutputError` where something other than a regular file is (see :func:`check_target`).
    Opened without following a link and without blocking, and checked again once open."""
    if not check_target(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link put there since the check
            raise OutputError(f"{path}: is a symbolic link, not a regular file: not replaced") from e
        return _unreadable(e)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped in since the check
            raise OutputError(f"{path}: is {_kind(st.st_mode)}, not a regular file: not replaced")
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _unreadable(e: OSError) -> bytes:
    """An existing file that cannot be read is taken to differ from anything: it needs --force."""
    return b"\0unreadable: " + str(e.strerror or e).encode()


def write_output(path: Path, data: str | bytes, *, force: bool = False) -> str:
    """Write ``data`` (text as UTF-8) to ``path`` under the rule above; "written" (nothing was there),
    "same" (identical bytes were there) or "replaced" (a different file was, and ``force`` is on).
    :class:`OutputError`, one line naming ``path``, when it is refused or cannot be written."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    old = read_existing(path, len(raw) + 1)
    if old is not None and old != raw and not force:
        raise OutputError(f"{path} exists and is not this output (its content differs); pass --force to replace it")
    try:
        write_atomic(path, raw)
    except OSError as e:  # the error names the temporary file: name the user's path instead
        raise OutputError(f"{path}: cannot write: {_reason(e)}") from e
    return "written" if old is None else "same" if old == raw else "replaced"


def stage(path: Path, data: str | bytes) -> str:
    """A complete temporary file beside ``path`` holding ``data``, to be put in place by :func:`place`
    once everything written with it is (a pair written both or neither); after :func:`check_target`.
    The caller removes the temporary name when it is not placed. :class:`OutputError` names ``path``."""
    from .atomic import _complete_temporary

    check_target(path)
    try:
        return _complete_temporary(path, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_reason(e)}") from e


def place(tmp: str, path: Path) -> None:
    """Rename the file :func:`stage` made over ``path``, which must still be a regular file or nothing."""
    check_target(path)
    try:
        os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {_reason(e)}") from e
