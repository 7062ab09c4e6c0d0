"""Make the report's fonts: report_templates/fonts/Report{Sans,Mono}-*.ttf from matplotlib's DejaVu.

    python tools/make_fonts.py          (writes report_templates/fonts/; run again only to change the glyphs kept)

The PDF is set in DejaVu Sans and DejaVu Sans Mono. Taken from the system, each of the PDF's parts
made fontTools read a whole 750 KB font (its 6,000 glyphs and their layout tables) once per face to
cut out the glyphs used: about half of each part's writing time. These files keep only the scripts
and symbols a report prints (Latin, Greek, punctuation, arrows, mathematical operators, box
drawing, geometric shapes, a few check marks), without hinting, so that cut is a small fraction of
it; and every machine draws the same glyphs, whatever fonts it has. The kerning (GPOS) is kept:
the text is set as it was. The copies are renamed (Report Sans, Report Mono), as the DejaVu
licence asks of modified copies, so that no system font of the old name can stand in for them;
matplotlib (the charts) and WeasyPrint (the PDF) load these files by path.

The source is the copy of DejaVu that matplotlib ships, so the tool needs nothing the project
does not already install. LICENSE beside the fonts is DejaVu's.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "report_templates" / "fonts"

#: The Unicode blocks a report prints: Basic Latin and Latin-1, Latin Extended-A, Greek, phonetic
#: extensions (ᵀ), general punctuation, super- and subscripts, the euro sign, letterlike symbols,
#: arrows, mathematical operators, miscellaneous technical (⌊⌋), box drawing, block elements and
#: geometric shapes (▲ ●), the warning sign and check marks, and the replacement character.
UNICODES = ("U+0020-007E,U+00A0-017F,U+0370-03FF,U+1D00-1DBF,U+2000-206F,U+2070-209F,U+20AC,U+2100-214F,"
            "U+2190-21FF,U+2200-22FF,U+2300-23FF,U+2500-25FF,U+26A0,U+2713-2718,U+FFFD")
#: (source file in matplotlib's fonts, file written, family name)
FACES = [(f"DejaVuSans{style}.ttf", f"ReportSans{style}.ttf", "Report Sans")
         for style in ("", "-Bold", "-Oblique", "-BoldOblique")] + \
        [(f"DejaVuSansMono{style}.ttf", f"ReportMono{style}.ttf", "Report Mono")
         for style in ("", "-Bold", "-Oblique", "-BoldOblique")]


def _rename(font, family: str) -> None:  # noqa: ANN001  (a fontTools TTFont)
    """Every name record that says DejaVu Sans (Mono) says ``family`` instead, the PostScript name
    included; the copyright and licence records are kept as they are."""
    old_family = "DejaVu Sans Mono" if family == "Report Mono" else "DejaVu Sans"
    for rec in font["name"].names:
        if rec.nameID in (0, 13, 14):  # copyright, licence, licence URL
            continue
        text = rec.toUnicode()
        new = text.replace(old_family, family).replace(old_family.replace(" ", ""), family.replace(" ", ""))
        if new != text:
            rec.string = new


def make(source_dir: Path, out: Path) -> list[Path]:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for src, dst, family in FACES:
        options = subset.Options()
        options.hinting = False
        options.layout_features = ["kern", "liga", "calt", "ccmp", "locl", "mark", "mkmk"]
        options.drop_tables += ["MATH", "FFTM"]
        options.name_IDs = ["*"]
        options.notdef_outline = True
        font = TTFont(source_dir / src)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=subset.parse_unicodes(UNICODES))
        subsetter.subset(font)
        _rename(font, family)
        font.save(out / dst)
        written.append(out / dst)
    shutil.copyfile(source_dir / "LICENSE_DEJAVU", out / "LICENSE")
    return written


def main() -> int:
    import matplotlib

    source = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for path in make(source, OUT):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
