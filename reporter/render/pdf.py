"""HTML to PDF through WeasyPrint. A failure here never removes the HTML already written."""

from __future__ import annotations

import logging
from pathlib import Path


class PdfError(Exception):
    pass


def write_pdf(html_text: str, out: Path, base_url: Path) -> int:
    """Write the PDF atomically; returns its page count."""
    try:
        from weasyprint import HTML
    except (ImportError, OSError) as e:  # OSError: pango/cairo libraries missing
        raise PdfError(f"WeasyPrint is not usable here ({e}); the HTML report is complete") from e
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        doc = HTML(string=html_text, base_url=str(base_url)).render()
        doc.write_pdf(tmp)
        tmp.replace(out)
    except Exception as e:
        tmp.unlink(missing_ok=True)
        raise PdfError(f"PDF rendering failed: {type(e).__name__}: {e}; the HTML report is complete") from e
    return len(doc.pages)
