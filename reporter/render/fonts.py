"""The report's fonts, one answer to "which font files set the PDF and the charts".

report_templates/fonts/ holds DejaVu Sans and Sans Mono cut to the glyphs a report prints and named
Report Sans and Report Mono (tools/make_fonts.py says why). WeasyPrint loads them through
:data:`STYLESHEET` (its @font-face rules), matplotlib by path (:func:`register_with_matplotlib`), so
a chart's labels are measured with the font the PDF draws them in. :func:`digest` keys the caches
of what they shape (laid-out parts of the PDF, drawn charts).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from . import TEMPLATES

FOLDER = TEMPLATES / "fonts"
STYLESHEET = FOLDER / "fonts.css"
SANS, MONO = "Report Sans", "Report Mono"


def files() -> list[Path]:
    return sorted(FOLDER.glob("*.ttf"))


@functools.cache
def digest() -> str:
    """A hash of the font files and their stylesheet: a cached layout or chart made with other fonts
    is not reused."""
    h = hashlib.sha256()
    for path in [*files(), STYLESHEET]:
        h.update(path.name.encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()[:16]


def register_with_matplotlib(font_manager: Any) -> None:
    """Add the font files to matplotlib's font manager (a missing folder leaves its own DejaVu)."""
    for path in files():
        font_manager.fontManager.addfont(str(path))
