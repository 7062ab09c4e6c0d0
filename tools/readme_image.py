"""The README's picture of a report: pages of a built PDF side by side, as one small PNG.

    python tools/readme_image.py reports/flashattn/worklog.pdf 1 3 24 -o docs/report-page.png

Each page is rendered with poppler's ``pdftoppm`` (Debian package poppler-utils) at ``--dpi``, the pages
are set on a grey ground with a margin between them, and the picture is stored with a 256-colour
palette (a report page is text and a few flat colours), a third of its size as full colour.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdf", type=Path)
    ap.add_argument("pages", type=int, nargs="+", help="page numbers, 1-based, in the order shown")
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--dpi", type=int, default=60)
    ap.add_argument("--margin", type=int, default=12, help="pixels of ground around and between the pages")
    args = ap.parse_args(argv)
    from PIL import Image

    if not args.pdf.is_file():
        raise SystemExit(f"{args.pdf}: no such PDF (build it first: report build <assignment>)")
    images = []
    with tempfile.TemporaryDirectory() as tmp:
        for p in args.pages:
            stem = Path(tmp) / f"page{p}"
            subprocess.run(["pdftoppm", "-r", str(args.dpi), "-png", "-singlefile", "-f", str(p), "-l", str(p),
                            str(args.pdf), str(stem)], check=True)
            images.append(Image.open(f"{stem}.png").convert("RGB"))
    m = args.margin
    width = sum(im.width for im in images) + m * (len(images) + 1)
    height = max(im.height for im in images) + 2 * m
    sheet = Image.new("RGB", (width, height), (226, 229, 234))
    x = m
    for im in images:
        sheet.paste(im, (x, m))
        x += im.width + m
    sheet.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(args.output, optimize=True)
    print(f"wrote {args.output}: {width} x {height}, {args.output.stat().st_size / 1e3:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
