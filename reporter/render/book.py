"""The PDF as a book of three parts, laid out in parallel and bound into one file.

WeasyPrint lays a document out on one core, about a quarter of a second per page. The report's
PDF is therefore three documents: the front matter (cover, contents, the steps table), the body
(the problem, Part 1–3) and the appendix. Each is numbered on its own, as books are (front matter
i, ii …; body 1, 2 …; appendix A-1, A-2 …), so none waits for another's page count, and two
:class:`~reporter.render.pdf.Worker` processes lay out the body and the appendix at once. The
contents page needs the others' page numbers: it is laid out with the numbers of the last build
while they run and again only if they moved. A part whose HTML did not change since an earlier
build comes from the cache (:class:`PartCache`) without being laid out.

Binding (pypdf): the parts' pages in order, their bookmarks, the links from one part into another
(WeasyPrint drops them, :mod:`reporter.render.pdf` reports them), page labels so a PDF viewer
shows the printed numbers, one copy of each embedded font, and the front matter's title and
authors. The file is written under a unique temporary name and renamed into place.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from ..store import write_atomic
from .pdf import PdfError, Rendered, Worker

FORMAT = "book-4"  # part of every cache key: bump when the way a part is rendered changes
CACHE_ENTRIES = 160  # newest parts kept (a report has a dozen: its chunks, front matter, footers, the book)


@dataclass(frozen=True)
class Numbering:
    """How a series of pages is numbered: PDF page-label style (``/r`` lower roman, ``/D``
    decimal), prefix, and the printed footer (``{label}`` this page's number, ``{last}`` the
    series' last). Parts with the same numbering are counted as one series, in book order."""

    style: str
    prefix: str = ""
    footer_format: str = "page {label} / {last}"

    def label(self, index: int) -> str:
        n = index + 1
        return self.prefix + (_roman(n) if self.style == "/r" else str(n))

    def footer(self, index: int, count: int) -> str:
        return self.footer_format.format(label=self.label(index), last=self.label(count - 1))


FRONT = Numbering("/r", footer_format="{label}")
BODY = Numbering("/D")
APPENDIX = Numbering("/D", "A-")


def _roman(n: int) -> str:
    out = ""
    for value, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
                           (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while n >= value:
            out, n = out + letters, n - value
    return out


@dataclass(frozen=True)
class Part:
    name: str  # 'body', 'appendix': its file names and cache entries
    html: str
    numbering: Numbering
    position: int  # its place in the book, after the front matter (parts may be ready in another order)


class PartCache:
    """Rendered parts by the hash of their HTML (with WeasyPrint's version and :data:`FORMAT`), and
    the page labels of the last build of each output, under ``root``. ``root=None``: no cache."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._salt = FORMAT
        if root is not None:
            try:
                from importlib.metadata import version

                self._salt += version("weasyprint")
            except Exception:  # noqa: BLE001, S110  (no version known: the key still holds the HTML)
                pass

    def key(self, html: str) -> str:
        return hashlib.sha256((self._salt + "\0" + html).encode("utf-8")).hexdigest()[:32]

    def get(self, key: str) -> Rendered | None:
        if self.root is None:
            return None
        pdf, meta = self.root / f"{key}.pdf", self.root / f"{key}.json"
        try:
            r = Rendered.from_json(pdf, json.loads(meta.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return r if pdf.is_file() else None

    def put(self, key: str, r: Rendered) -> None:
        if self.root is None:
            return
        try:
            write_atomic(self.root / f"{key}.pdf", r.pdf.read_bytes())
            write_atomic(self.root / f"{key}.json", json.dumps(r.to_json()))
            self._prune()
        except OSError:
            pass  # a cache that cannot be written only costs the next build time

    def labels(self, name: str) -> dict[str, str] | None:
        if self.root is None:
            return None
        try:
            d = json.loads((self.root / f"labels-{_digest(name)}.json").read_text(encoding="utf-8"))
            return {str(k): str(v) for k, v in d.items()}
        except (OSError, ValueError, AttributeError):
            return None

    def save_labels(self, name: str, labels: dict[str, str]) -> None:
        if self.root is None:
            return
        try:
            write_atomic(self.root / f"labels-{_digest(name)}.json", json.dumps(labels, sort_keys=True))
        except OSError:
            pass

    def _prune(self) -> None:
        assert self.root is not None
        pdfs = sorted(self.root.glob("*.pdf"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in pdfs[CACHE_ENTRIES:]:
            p.unlink(missing_ok=True)
            p.with_suffix(".json").unlink(missing_ok=True)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class _Pool:
    """Parts to render on the workers, each on the first that is free, or from the cache."""

    def __init__(self, workers: list[Worker], cache: PartCache, tmp: Path, base_url: Path) -> None:
        self.workers, self.cache, self.tmp, self.base_url = workers, cache, tmp, base_url
        self.done: dict[str, Rendered] = {}
        self.keys: dict[str, str] = {}  # job name -> cache key of its HTML
        self.running: dict[int, tuple[str, str]] = {}  # worker index -> (job name, cache key)
        self.waiting: list[tuple[str, str, str]] = []  # (job name, html, cache key)

    def add(self, name: str, html: str) -> None:
        key = self.keys[name] = self.cache.key(html)
        if (hit := self.cache.get(key)) is not None:
            self.done[name] = hit
            return
        self.waiting.append((name, html, key))
        self._start()

    def _start(self) -> None:
        for i, w in enumerate(self.workers):
            if not self.waiting:
                return
            if i in self.running:
                continue
            name, html, key = self.waiting.pop(0)
            src = self.tmp / f"{name}.html"
            src.write_text(html, encoding="utf-8")
            w.submit(src, self.tmp / f"{name}.pdf", self.base_url)
            self.running[i] = (name, key)

    def wait(self, *names: str) -> None:
        """Until every named job is done (the workers answer in the order they were given jobs)."""
        while any(n not in self.done for n in names):
            if not self.running:
                raise PdfError(f"nothing renders {[n for n in names if n not in self.done]}")
            i = min(self.running)  # the jobs are short; wait for them in worker order
            name, key = self.running.pop(i)
            r = self.workers[i].result()
            self.cache.put(key, r)
            self.done[name] = r
            self._start()


class Book:
    """Parts given as they are ready (:meth:`add`: laid out at once on a free worker, or taken from
    the cache), then the front matter and the binding (:meth:`finish`)."""

    def __init__(self, workers: list[Worker], cache: PartCache, base_url: Path) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="report-book-")
        self.cache = cache
        self.pool = _Pool(workers, cache, Path(self._tmp.name), base_url)
        self.parts: list[Part] = []

    def add(self, part: Part) -> None:
        self.parts.append(part)
        self.pool.add(part.name, part.html)

    def finish(self, front: Callable[[dict[str, str]], str], footers: Callable[[list[str]], str], out: Path) -> int:
        """Lay out ``front(labels)``, given the printed page number of every anchor in the parts, and
        ``footers(texts)``, a document of one page per page of the book holding only that page's
        footer, and bind everything into ``out`` with the footers stamped on. Returns the page count."""
        try:
            return self._finish(front, footers, out)
        finally:
            self._tmp.cleanup()

    def _finish(self, front: Callable[[dict[str, str]], str], footers: Callable[[list[str]], str], out: Path) -> int:
        pool, cache, parts = self.pool, self.cache, sorted(self.parts, key=lambda p: p.position)
        guess = cache.labels(str(out))
        front_html = None
        if guess is not None and any(p.name not in pool.done for p in parts):
            front_html = front(guess)  # laid out now on a free worker, again below only if the numbers moved
            pool.add("front", front_html)
        pool.wait(*(p.name for p in parts))
        labels: dict[str, str] = {}
        offset: dict[Numbering, int] = {}  # pages of the series before each part
        for p in parts:
            start = offset.get(p.numbering, 0)
            for anchor, (page, _, _) in pool.done[p.name].anchors.items():
                labels.setdefault(anchor, p.numbering.label(start + page))
            offset[p.numbering] = start + pool.done[p.name].pages
        final_html = front(labels)
        if final_html != front_html:
            if front_html is not None:
                pool.wait("front")  # the worker answers in order; the stale front matter is dropped
                del pool.done["front"]
            pool.add("front", final_html)
        pool.wait("front")
        cache.save_labels(str(out), labels)
        book = [("front", FRONT)] + [(p.name, p.numbering) for p in parts]
        rendered = [(pool.done[name], numbering) for name, numbering in book]
        count: dict[Numbering, int] = {}
        for r, numbering in rendered:
            count[numbering] = count.get(numbering, 0) + r.pages
        seen: dict[Numbering, int] = {}
        texts = []
        for r, numbering in rendered:
            for _ in range(r.pages):
                texts.append(numbering.footer(seen.get(numbering, 0), count[numbering]))
                seen[numbering] = seen.get(numbering, 0) + 1
        pool.add("footers", footers(texts))
        pool.wait("footers")
        key = cache.key("book\0" + "\0".join(pool.keys[name] for name, _ in book) + "\0" + pool.keys["footers"])
        if (bound := cache.get(key)) is not None:  # the same parts bound before: the same book
            write_atomic(out, bound.pdf.read_bytes())
            return bound.pages
        try:
            pages = _bind(rendered, pool.done["footers"], out)
        except Exception as e:  # pypdf's errors, a full disk: the HTML is written, the old PDF kept
            raise PdfError(f"binding the PDF's parts failed ({type(e).__name__}: {e}); the HTML report is "
                           "complete") from e
        cache.put(key, Rendered(out, pages, {}, []))
        return pages


def _bind(parts: list[tuple[Rendered, Numbering]], footers: Rendered, out: Path) -> int:
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, DictionaryObject, FloatObject, NameObject, NumberObject, TextStringObject

    writer = PdfWriter()
    start = 0
    readers = []
    series: dict[Numbering, int] = {}
    for r, numbering in parts:
        reader = PdfReader(r.pdf)
        readers.append(reader)
        writer.append(reader, import_outline=False)
        writer.set_page_label(start, start + r.pages - 1, style=numbering.style,  # type: ignore[arg-type]
                              prefix=numbering.prefix or None, start=series.get(numbering, 0) + 1)
        series[numbering] = series.get(numbering, 0) + r.pages
        for page, rect, target in r.links:
            writer.add_annotation(start + page, DictionaryObject({
                NameObject("/Type"): NameObject("/Annot"), NameObject("/Subtype"): NameObject("/Link"),
                NameObject("/Rect"): ArrayObject([FloatObject(round(v, 2)) for v in rect]),
                NameObject("/BS"): DictionaryObject({NameObject("/W"): NumberObject(0)}),
                NameObject("/Dest"): TextStringObject(target)}))
        start += r.pages
    _outline(writer, parts)
    stamps = PdfReader(footers.pdf)
    if len(stamps.pages) != start:
        raise PdfError(f"the footers have {len(stamps.pages)} pages for a book of {start}")
    for page, stamp in zip(writer.pages, stamps.pages, strict=True):
        _stamp(writer, page, stamp)
    info = readers[0].metadata
    if info:
        writer.add_metadata({k: v for k, v in info.items() if k in ("/Title", "/Author", "/Creator", "/Producer")})
    try:  # one copy of each object the parts share (images, identical font subsets)
        writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)
    except TypeError:  # pypdf before 6 names them differently
        writer.compress_identical_objects(remove_identicals=True, remove_orphans=True)  # type: ignore[call-arg]
    buf = io.BytesIO()
    writer.write(buf)
    write_atomic(out, buf.getvalue())
    return start


def _outline(writer, parts: list[tuple[Rendered, Numbering]]) -> None:  # noqa: ANN001
    """The PDF's bookmarks: every part's in book order, each nested under the nearest one before it
    of a lower level, whichever part that is in (a phase of Part 1 laid out as a document of its own
    still sits under Part 1)."""
    from pypdf.generic import Fit

    stack: list[tuple[int, Any]] = []
    start = 0
    for r, _ in parts:
        for level, title, page, x, y, is_open in r.bookmarks:
            while stack and stack[-1][0] >= level:
                stack.pop()
            item = writer.add_outline_item(title=title, page_number=start + page,
                                           parent=stack[-1][1] if stack else None,
                                           fit=Fit.xyz(left=x, top=y), is_open=is_open)
            stack.append((level, item))
        start += r.pages


def _stamp(writer, page, stamp) -> None:  # noqa: ANN001  (pypdf objects)
    """Draw ``stamp`` (a page of the footers document) over ``page``: the stamp becomes a form
    XObject the page draws last, in its own graphics state. Cheaper than pypdf's merge_page, which
    parses both content streams."""
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject

    form = DecodedStreamObject()
    form.set_data(stamp.get_contents().get_data() if stamp.get_contents() is not None else b"")
    form.update({NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Form"),
                 NameObject("/BBox"): stamp.mediabox,
                 NameObject("/Resources"): stamp["/Resources"].get_object().clone(writer)})
    ref = writer._add_object(form)  # noqa: SLF001  (pypdf has no public call for a bare indirect object)
    # the page's own copies of its resources and their XObject names: pages may share them
    resources = DictionaryObject(page["/Resources"].get_object())
    names = DictionaryObject(resources["/XObject"].get_object()) if "/XObject" in resources else DictionaryObject()
    names[NameObject("/ReportFooter")] = ref
    resources[NameObject("/XObject")] = names
    page[NameObject("/Resources")] = resources
    before, after = DecodedStreamObject(), DecodedStreamObject()
    before.set_data(b"q\n")
    after.set_data(b"\nQ\nq /ReportFooter Do Q\n")
    contents = page.raw_get("/Contents")
    body = contents.get_object()
    parts = ArrayObject([writer._add_object(before)])  # noqa: SLF001
    parts.extend(body) if isinstance(body, ArrayObject) else parts.append(contents)
    parts.append(writer._add_object(after))  # noqa: SLF001
    page[NameObject("/Contents")] = parts
