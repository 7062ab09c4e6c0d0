"""The index of `report build --all`: one entry per assignment, linking its HTML and PDF, with the
best version's figure and the first sentences of page 1 (what it is faster than)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import jinja2

from . import TEMPLATES
from .cover import Cover


@dataclass
class Entry:
    name: str  # the assignment's folder, also its report's folder beside the index
    title: str
    cover: Cover | None = None
    gpu: str = ""
    html: bool = False
    pdf: bool = False
    pages: int | None = None
    pdf_error: str | None = None
    error: str | None = None  # the build failed: why, in one line


def render_index(entries: list[Entry]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("index.html.j2").render(reports=entries, date=datetime.now(UTC).strftime("%Y-%m-%d"))
