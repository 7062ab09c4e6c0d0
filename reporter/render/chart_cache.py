"""Work done once per content (:func:`kept`), charts first: the SVG text of a chart kept under the
cache folder, keyed by the hash of the plain data it is drawn from (a frozen dataclass of numbers and
strings), the source of the modules that draw it and matplotlib's version. A build whose charts did not change neither
imports matplotlib nor draws (about two seconds of the build on the 2-core machine). Compiled jinja templates
(the report's and the bound worklog) are kept there too (:func:`template_bytecode`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..store import write_atomic
from . import fonts

T = TypeVar("T")

_DRAWING = ("charts.py", "profile_charts.py")  # a change to how charts are drawn invalidates them all
KEEP = 64  # newest charts kept


def _plain(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {f.name: _plain(getattr(o, f.name)) for f in dataclasses.fields(o)}
    if isinstance(o, (list, tuple)):
        return [_plain(x) for x in o]
    if isinstance(o, dict):
        return {str(k): _plain(v) for k, v in o.items()}
    if o is None or isinstance(o, (str, int, float, bool)):
        return o
    raise TypeError(f"chart data must be plain (dataclasses of numbers and strings), not {type(o).__name__}")


def _salt() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _DRAWING:
        h.update((here / name).read_bytes())
    h.update(fonts.digest().encode())  # labels are measured with the report's fonts
    try:
        from importlib.metadata import version

        h.update(version("matplotlib").encode())
    except Exception:  # noqa: BLE001  (no version known: the drawing code's hash still keys it)
        h.update(b"?")
    return h.hexdigest()


def svg(kind: str, data: T, draw: Callable[[T], str], root: Path | None) -> str:
    """``draw(data)``, or the SVG a build drew from equal data before (``root=None``: no cache)."""
    if root is None:
        return draw(data)
    key = hashlib.sha256(json.dumps([kind, _salt(), _plain(data)], sort_keys=True).encode()).hexdigest()[:32]
    return kept(root, f"chart-{key}.svg", lambda: draw(data).encode("utf-8"), lambda b: b.decode("utf-8"),
                "chart-*.svg", KEEP)


def template_bytecode(root: Path | None, configured_by: str) -> Any:
    """A jinja bytecode cache under ``root`` (None without one) for the templates of an environment
    that the module file ``configured_by`` sets up: jinja keys each template by its name and source;
    the folder is keyed by jinja's version and that module's source, whose options shape the code."""
    if root is None:
        return None
    import jinja2

    salt = hashlib.sha256(jinja2.__version__.encode() + b"\0" + Path(configured_by).read_bytes()).hexdigest()[:16]
    folder = root / f"jinja-{Path(configured_by).stem}-{salt}"
    try:
        if not folder.is_dir():
            for old in root.glob(f"jinja-{Path(configured_by).stem}-*"):  # compiled by an earlier source
                shutil.rmtree(old, ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a cache that cannot be written only costs the next build the compiling
    return jinja2.FileSystemBytecodeCache(str(folder))


def kept(root: Path, name: str, make: Callable[[], bytes], load: Callable[[bytes], T], family: str, keep: int) -> T:
    """``load`` of the file ``root/name``, or, when it is missing or ``load`` raises ValueError, of what
    ``make()`` returns, written there for the next build; of the files matching ``family``, the ``keep``
    newest are kept. A cache that cannot be written only costs the next build the work."""
    try:
        return load((root / name).read_bytes())
    except (OSError, ValueError):
        pass
    data = make()
    try:
        root.mkdir(parents=True, exist_ok=True)
        write_atomic(root / name, data)
        for old in sorted(root.glob(family), key=lambda p: p.stat().st_mtime, reverse=True)[keep:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
    return load(data)
