"""HTML documents to PDF through WeasyPrint, in child processes. A failure here never removes the
HTML already written.

WeasyPrint's import and its first font lookup take about a second, and its layout runs on one
core. A :class:`Worker` is a child process started before the report's context is computed, so
the import overlaps the rest of the build; the book (:mod:`reporter.render.book`) keeps two and
gives each a part of the report. The child reads jobs from its stdin, one JSON line each
(``{"html": path, "pdf": path, "base_url": url}``), renders the HTML file to the PDF path and
answers with one JSON line: the page count, the page height, the position of every anchor and the
links whose target is in another part (WeasyPrint drops those; the book adds them back).
"""

from __future__ import annotations

import functools
import json
import logging
import select
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PX_TO_PT = 0.75  # WeasyPrint lays out in CSS px; PDF user space is in points


class PdfError(Exception):
    pass


@dataclass(frozen=True)
class Rendered:
    """What the book needs to know of a part rendered to ``pdf``: its pages, where its anchors are
    (page index and the point at their top left, in PDF points from the page's bottom left) and the
    links to anchors it does not hold (page index, rectangle in PDF points, target)."""

    pdf: Path
    pages: int
    anchors: dict[str, tuple[int, float, float]]
    links: list[tuple[int, tuple[float, float, float, float], str]]
    # (level, title, page index, x, y, open): the bookmarks in document order, levels as the CSS
    # gives them, so that the book nests those of one part under those of the part before
    bookmarks: list[tuple[int, str, int, float, float, bool]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"pages": self.pages, "anchors": self.anchors, "links": self.links, "bookmarks": self.bookmarks}

    @classmethod
    def from_json(cls, pdf: Path, d: dict[str, Any]) -> Rendered:
        return cls(pdf=pdf, pages=int(d["pages"]),
                   anchors={k: (int(v[0]), float(v[1]), float(v[2])) for k, v in d["anchors"].items()},
                   links=[(int(p), (float(r[0]), float(r[1]), float(r[2]), float(r[3])), str(t))
                          for p, r, t in d["links"]],
                   bookmarks=[(int(lv), str(t), int(p), float(x), float(y), bool(o))
                              for lv, t, p, x, y, o in d.get("bookmarks", [])])


@functools.cache
def _fonts() -> tuple[Any, Any]:
    """The report's fonts as WeasyPrint takes them: a font configuration holding their @font-face
    rules and the stylesheet naming them, made once per process and shared by its jobs."""
    from weasyprint import CSS
    from weasyprint.text.fonts import FontConfiguration

    from .fonts import STYLESHEET

    config = FontConfiguration()
    return config, CSS(filename=str(STYLESHEET), font_config=config)


def render_file(html_path: Path, pdf_path: Path, base_url: str) -> Rendered:
    """Lay out and draw one HTML file (runs in the child), in the report's fonts."""
    from weasyprint import HTML

    logging.getLogger("weasyprint").setLevel(logging.ERROR)  # links into other parts: the book adds them
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    config, fonts = _fonts()
    doc = HTML(filename=str(html_path), base_url=base_url, encoding="utf-8").render(stylesheets=[fonts],
                                                                                    font_config=config)
    anchors: dict[str, tuple[int, float, float]] = {}
    for i, page in enumerate(doc.pages):
        height = page.height * PX_TO_PT
        for name, (x, y, _, _) in page.anchors.items():
            anchors.setdefault(name, (i, x * PX_TO_PT, height - y * PX_TO_PT))
    links = []
    for i, page in enumerate(doc.pages):
        height = page.height * PX_TO_PT
        for kind, target, (x1, y1, x2, y2), _ in page.links:
            if kind == "internal" and target not in anchors:
                links.append((i, (x1 * PX_TO_PT, height - y2 * PX_TO_PT, x2 * PX_TO_PT, height - y1 * PX_TO_PT), target))
    bookmarks = []
    for i, page in enumerate(doc.pages):
        height = page.height * PX_TO_PT
        for level, title, (x, y), state in page.bookmarks:
            bookmarks.append((int(level), str(title), i, x * PX_TO_PT, height - y * PX_TO_PT, state == "open"))
    # each part carries subsets of its fonts: embedding the whole fonts (full_fonts) cost more in
    # compressing them and in binding the book (a megabyte of fonts per part) than subsetting does
    doc.write_pdf(pdf_path)
    return Rendered(pdf_path, len(doc.pages), anchors, links, bookmarks)


def first_answer(workers: list[Worker]) -> Worker:
    """Of busy workers, the first to answer (waiting for it): the others' jobs may run longer."""
    streams = {w.proc.stdout: w for w in workers if w.proc.stdout is not None}
    ready, _, _ = select.select(list(streams), [], [])
    return streams[ready[0]]


class Worker:
    """A child process that imports WeasyPrint now and renders parts later, one at a time."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "reporter.render.pdf"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self.busy_with: Path | None = None

    @property
    def usable(self) -> bool:
        """Alive and idle: it can take the next job."""
        return self.proc.poll() is None and self.busy_with is None

    def submit(self, html_path: Path, pdf_path: Path, base_url: Path) -> None:
        assert self.busy_with is None, "one job at a time"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"html": str(html_path), "pdf": str(pdf_path),
                                              "base_url": str(base_url)}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._fail("the PDF process stopped before its job")
        self.busy_with = pdf_path

    def result(self) -> Rendered:
        """Wait for the job given to :meth:`submit`."""
        assert self.busy_with is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        pdf, self.busy_with = self.busy_with, None
        if not line:
            self._fail("the PDF process ended without an answer")
        answer = json.loads(line)
        if "error" in answer:
            raise PdfError(f"PDF rendering failed: {answer['error']}; the HTML report is complete")
        return Rendered.from_json(pdf, answer)

    def _fail(self, what: str) -> None:
        self.close()
        stderr = self.proc.stderr.read() if self.proc.stderr is not None else ""
        last = (stderr.strip().splitlines() or ["no message"])[-1]
        raise PdfError(f"{what} ({last}); the HTML report is complete")

    def close(self) -> None:
        """End the child: idle, it leaves on its own when its stdin closes (no need to wait for its
        interpreter to shut down); busy, it is killed, so nothing it would write is left."""
        if self.proc.poll() is not None:
            return
        if self.busy_with is not None:
            self.proc.kill()
            self.proc.wait()
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            self.proc.kill()
            self.proc.wait()


def _serve() -> int:
    try:
        from weasyprint import HTML

        config, fonts = _fonts()  # fontconfig, the font cache and the report's fonts, before a job arrives
        HTML(string='<p style="font-family: \'Report Sans\'">warm <code>up</code></p>').render(stylesheets=[fonts], font_config=config)
    except (ImportError, OSError) as e:
        print(f"WeasyPrint is not usable here ({e})", file=sys.stderr)
        return 2
    for line in sys.stdin:
        job = json.loads(line)
        try:
            answer = render_file(Path(job["html"]), Path(job["pdf"]), job["base_url"]).to_json()
        except Exception as e:  # noqa: BLE001  (a process boundary: whatever failed goes to the parent as one line)
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
