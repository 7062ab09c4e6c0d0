"""HTML to PDF through WeasyPrint. A failure here never removes the HTML already written.

WeasyPrint's import and its first font lookup take about a second; :class:`PdfProcess` pays them
in a child process started before the report's context is computed, so they overlap the rest of
the build on a second core. The child reads one job from its stdin (a JSON line with the output
path and base URL, then the HTML), writes the PDF under a unique temporary name, renames it into
place and prints the page count.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path


class PdfError(Exception):
    pass


def _render(html_text: str, out: Path, base_url: str) -> int:
    from weasyprint import HTML

    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        doc = HTML(string=html_text, base_url=base_url).render()
        # full_fonts: the fonts go in without fontTools' subsetting, which took a third of the PDF
        # step; the file is the same size to within a few kB (the fonts are compressed either way)
        doc.write_pdf(tmp, full_fonts=True)
        tmp.chmod(0o644)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(doc.pages)


class PdfProcess:
    """A child process that imports WeasyPrint now and renders one PDF later (:meth:`write`)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "reporter.render.pdf"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")

    def write(self, html_text: str, out: Path, base_url: Path) -> int:
        job = json.dumps({"out": str(out), "base_url": str(base_url)})
        stdout, stderr = self.proc.communicate(job + "\n" + html_text)
        if self.proc.returncode != 0:
            last = (stderr.strip().splitlines() or ["no message"])[-1]
            raise PdfError(f"PDF rendering failed: {last}; the HTML report is complete")
        try:
            return int(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            raise PdfError(f"PDF rendering gave no page count ({stdout.strip()[:200]!r}); the HTML report is "
                           "complete") from e

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _serve() -> int:
    try:
        from weasyprint import HTML

        HTML(string="<p>warm</p>").render()  # fontconfig and the font cache, before the job arrives
    except (ImportError, OSError) as e:
        print(f"WeasyPrint is not usable here ({e})", file=sys.stderr)
        sys.stdin.read()
        return 2
    job = json.loads(sys.stdin.readline())
    html_text = sys.stdin.read()
    try:
        pages = _render(html_text, Path(job["out"]), job["base_url"])
    except Exception as e:  # noqa: BLE001  (a process boundary: whatever failed goes to the parent as one line)
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(pages)
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
