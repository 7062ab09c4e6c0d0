"""The PDF as a book of parts, laid out in parallel and bound into one file.

WeasyPrint lays a document out on one core, about a quarter of a second per page. The report's
PDF is therefore several documents: the cover, the rest of the front matter (contents, the steps
table), the body (the problem, Part 1–3, in chunks) and the appendix. Each series is numbered on
its own, as books are (front matter i, ii …; body 1, 2 …; appendix A-1, A-2 …), so no part waits
for another's page count, and two :class:`~reporter.render.pdf.Worker` processes lay parts out as
they are given, each taking the next as soon as it is free. The contents needs the others' page
numbers (a :class:`LabelledPart`): it is laid out with the numbers of the last build while they
run and again only if they moved; on a first build, once they are done. A part whose HTML did not
change since an earlier build comes from the cache (:class:`PartCache`) without being laid out.

Binding (pypdf): the parts' pages in order, their bookmarks, the links from one part into another
(WeasyPrint drops them, :mod:`reporter.render.pdf` reports them), page labels so a PDF viewer
shows the printed numbers, one copy of each embedded font, and the front matter's title and
authors. The file is written under a unique temporary name and renamed into place.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from ..store import write_atomic
from .pdf import PdfError, Rendered, Worker, first_answer

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
    name: str  # 'cover', 'body-0', 'appendix': its file names and cache entries
    html: str
    numbering: Numbering
    position: int  # its place in the book (parts may be ready in another order)


@dataclass(frozen=True)
class LabelledPart:
    """A part that prints the page numbers of anchors in the others (a table of contents): laid out
    from ``html(labels)`` once those are known. ``anchors``: its own anchors, which others may print."""

    name: str
    html: Callable[[dict[str, str]], str]
    numbering: Numbering
    position: int
    anchors: tuple[str, ...] = ()


def _labels(rendered: list[tuple[Rendered, Numbering]]) -> dict[str, str]:
    """The printed page number of every anchor of the parts, given in book order (the first of two
    equal anchors wins)."""
    labels: dict[str, str] = {}
    offset: dict[Numbering, int] = {}  # pages of the series before each part
    for r, numbering in rendered:
        start = offset.get(numbering, 0)
        for anchor, (page, _, _) in r.anchors.items():
            labels.setdefault(anchor, numbering.label(start + page))
        offset[numbering] = start + r.pages
    return labels


class PartCache:
    """Rendered parts by the hash of their HTML (with WeasyPrint's version and :data:`FORMAT`), and
    the page labels of the last build of each output, under ``root``. ``root=None``: no cache."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._salt = FORMAT
        if root is not None:
            from .fonts import digest

            self._salt += digest()
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
            # a part this build takes from the cache is the newest entry now: the pruning after the parts it
            # renders (oldest first) must not delete a file the binding will read
            os.utime(pdf)
            os.utime(meta)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return r

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
    """Parts to render on the workers, each on the first that is free, or from the cache. When a
    part waits and every worker is busy, another is started, up to ``most`` (the list given grows,
    so whoever started the first ones closes these too)."""

    def __init__(self, workers: list[Worker], cache: PartCache, tmp: Path, base_url: Path, most: int) -> None:
        self.workers, self.cache, self.tmp, self.base_url, self.most = workers, cache, tmp, base_url, most
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
        if self.waiting and len(self.running) == len(self.workers) and len(self.workers) < self.most:
            self.workers.append(Worker())
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
        """Until every named job is done, giving a worker its next job as soon as it answers."""
        while any(n not in self.done for n in names):
            if not self.running:
                raise PdfError(f"nothing renders {[n for n in names if n not in self.done]}")
            first = first_answer([self.workers[i] for i in self.running])
            i = self.workers.index(first)
            name, key = self.running.pop(i)
            r = first.result()
            self.cache.put(key, r)
            self.done[name] = r
            self._start()


FOLDER_PREFIX = "report-book-"  # then the building process's id and a unique tail


def remove_stale_folders(tmp: Path | None = None) -> list[Path]:
    """Remove the book folders of builds whose process is gone (killed with SIGKILL, which nothing can
    catch: the folder's own cleanup never ran), in ``tmp`` (default the system's temporary folder).
    Only folders named ``report-book-<pid>-...`` whose process no longer exists are touched."""
    removed = []
    root = Path(tmp or tempfile.gettempdir())
    for p in root.glob(f"{FOLDER_PREFIX}*-*"):
        pid = p.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not p.is_dir() or p.is_symlink():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
        except (PermissionError, OverflowError, ValueError):
            continue  # a process of another user's, or no process id at all: not ours to judge
    return removed


def _held_interrupts(make: Callable[[], Any]) -> Any:
    """``make()`` with SIGTERM and SIGINT held: a signal that comes while it runs is raised as its handler
    raises it (reporter.commands.build's interrupt) once ``make`` has returned, so that what it made (a
    temporary folder) has its cleanup registered before any interrupt unwinds. Masking the signal is not
    enough: another thread of the process can receive it, and Python then runs the handler in the main
    thread at once. Off the main thread, where handlers cannot be set, ``make()`` as it is."""
    if threading.current_thread() is not threading.main_thread():
        return make()
    came: list[tuple[int, Any]] = []
    held = (signal.SIGTERM, signal.SIGINT)
    before = {s: signal.signal(s, lambda signum, frame: came.append((signum, frame))) for s in held}
    try:
        made = make()
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    for signum, frame in came[:1]:
        handler = before[signum]
        try:
            if callable(handler):
                handler(signum, frame)  # raises: the caller's interrupt, now that `made` is registered
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
        except BaseException:
            cleanup = getattr(made, "cleanup", None)  # the caller never gets it: remove it now, not at exit
            if callable(cleanup):
                cleanup()
            raise
    return made


class Book:
    """Parts given as they are ready (:meth:`add`: laid out at once on a free worker, or taken from
    the cache), then the contents and the binding (:meth:`finish`). ``workers``: those started
    already; up to ``most`` are used, the others started when parts wait for them."""

    def __init__(self, workers: list[Worker], cache: PartCache, base_url: Path, most: int = 2) -> None:
        remove_stale_folders()
        self._tmp = _held_interrupts(lambda: tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self.cache = cache
        self.pool = _Pool(workers, cache, Path(self._tmp.name), base_url, max(most, len(workers)))
        self.parts: list[Part] = []

    def add(self, part: Part) -> None:
        self.parts.append(part)
        self.pool.add(part.name, part.html)

    def finish(self, labelled: LabelledPart, footers: Callable[[list[str]], str], out: Path) -> int:
        """Lay out ``labelled`` once the printed page number of every anchor is known, and
        ``footers(texts)``, a document of one page per page of the book holding only that page's
        footer, and bind everything into ``out`` with the footers stamped on. Returns the page count."""
        try:
            return self._finish(labelled, footers, out)
        finally:
            self._tmp.cleanup()

    def _finish(self, labelled: LabelledPart, footers: Callable[[list[str]], str], out: Path) -> int:
        pool, cache, parts = self.pool, self.cache, sorted(self.parts, key=lambda p: p.position)
        guess = cache.labels(str(out))
        laid = None  # the labelled part's HTML given to a worker
        if guess is not None and any(p.name not in pool.done for p in parts):
            laid = labelled.html(guess)  # laid out now on a free worker, again below only if the numbers moved
            pool.add(labelled.name, laid)
        pool.wait(*(p.name for p in parts))
        # its own length and anchors move the numbers of what follows it in its series: until it is
        # laid out, it is taken to be one page with its anchors on that page
        own: Rendered = Rendered(Path(), 1, {a: (0, 0.0, 0.0) for a in labelled.anchors}, [])
        for _ in range(3):
            labels = _labels([(own if p is labelled else pool.done[p.name], p.numbering)
                              for p in sorted([*parts, labelled], key=lambda p: p.position)])
            html = labelled.html(labels)
            if html != laid:
                if laid is not None:
                    pool.wait(labelled.name)  # a stale layout is dropped
                    del pool.done[labelled.name]
                pool.add(labelled.name, html)
                laid = html
            pool.wait(labelled.name)
            done = pool.done[labelled.name]
            if done.pages == own.pages and {a: v[0] for a, v in done.anchors.items()} == \
                    {a: v[0] for a, v in own.anchors.items()}:
                break
            own = done
        cache.save_labels(str(out), labels)
        ordered = sorted([*parts, labelled], key=lambda p: p.position)
        book = [(p.name, p.numbering) for p in ordered]
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
