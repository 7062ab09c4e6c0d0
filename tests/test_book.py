"""The book (reporter.render.book) on stand-in workers: the contents laid out from the page numbers
of the other parts and of its own anchors, parts handed to whichever worker is free, a second
worker started only when parts wait. The stand-in lays out a document as one page per section
between ``<hr>`` tags, with each ``id`` on the page it is in, and writes that many blank pages."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from pypdf import PdfReader

from reporter.render import book as book_module
from reporter.render import pdf
from reporter.render.book import APPENDIX, BODY, FRONT, Book, LabelledPart, Part, PartCache

STAND_IN = r"""
import json, re, sys, time
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
for line in sys.stdin:
    job = json.loads(line)
    html = open(job["html"], encoding="utf-8").read()
    if "slow" in html:
        time.sleep(1.5)
    pages = html.count("data-footer") or html.count("<hr>") + 1
    anchors = {}
    for k, page in enumerate(html.split("<hr>")):
        for a in re.findall(r'id="([^"]+)"', page):
            anchors.setdefault(a, [k, 0.0, 800.0])
    w = PdfWriter()
    for _ in range(pages):
        page = w.add_blank_page(595, 842)
        content = DecodedStreamObject()
        content.set_data(b"0 0 m 1 1 l S")
        page[NameObject("/Contents")] = w._add_object(content)
        page[NameObject("/Resources")] = DictionaryObject()
    w.write(job["pdf"])
    print(json.dumps({"pages": pages, "anchors": anchors, "links": []}), flush=True)
"""

started: list[int] = []


class StandIn(pdf.Worker):
    def __init__(self) -> None:  # noqa: D107  (no WeasyPrint: the stand-in above)
        self.proc = subprocess.Popen([sys.executable, "-c", STAND_IN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self.busy_with = None
        started.append(1)


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(book_module, "Worker", StandIn)
    started.clear()
    workers: list[pdf.Worker] = []
    yield workers
    for w in workers:
        w.close()


def _contents(laid: list[str]):
    def html(labels: dict[str, str]) -> str:
        text = (f'<p id="contents">{" ".join(f"{k}={v}" for k, v in sorted(labels.items()))}</p>'
                '<hr><p id="steps">the steps table</p>')  # two pages: the steps table on the second
        laid.append(text)
        return text
    return html


def test_the_contents_prints_where_each_anchor_is_its_own_included(tmp_path, stand_in):
    b = Book(stand_in, PartCache(None), tmp_path, most=2)
    b.add(Part("cover", '<p id="top">cover</p>', FRONT, position=-2))
    b.add(Part("body-0", '<p id="v01">one</p><hr><p id="v02">two</p>', BODY, position=1))
    b.add(Part("appendix", '<p id="app-a">A</p><hr><hr><p id="app-b">B</p>', APPENDIX, position=1000))
    laid: list[str] = []
    pages = b.finish(LabelledPart("contents", _contents(laid), FRONT, position=-1, anchors=("contents", "steps")),
                     lambda texts: "".join(f'<div class="footer" data-footer="{t}"></div>' for t in texts),
                     tmp_path / "book.pdf")
    assert pages == 1 + 2 + 2 + 3
    # first taken as one page with its anchors on it; laid out, it has two and the steps on the second
    assert "steps=ii" in laid[0] and "steps=iii" in laid[-1]
    assert "v02=2" in laid[-1] and "app-b=A-3" in laid[-1] and "top=i" in laid[-1]
    assert PdfReader(tmp_path / "book.pdf").page_labels == ["i", "ii", "iii", "1", "2", "A-1", "A-2", "A-3"]
    assert len(started) == 2  # parts waited while the first worker was busy


def test_one_part_needs_one_worker(tmp_path, stand_in):
    stand_in.append(StandIn())
    b = Book(stand_in, PartCache(None), tmp_path, most=2)
    b.add(Part("body-0", '<p id="v01">one</p>', BODY, position=1))
    b.finish(LabelledPart("contents", lambda labels: f'<p id="contents">{labels["v01"]}</p>', FRONT, position=-1),
             lambda texts: "".join(f'<div class="footer" data-footer="{t}"></div>' for t in texts),
             tmp_path / "book.pdf")
    assert len(started) == 1 and len(stand_in) == 1


def test_a_worker_that_answers_first_gets_the_next_part(tmp_path, stand_in, monkeypatch):
    """A long part on one worker does not hold up the short ones on the other: each answer is read
    when it comes, and the worker that gave it takes the next part."""
    read: list[str] = []
    real = pdf.Worker.result

    def result(self):
        r = real(self)
        read.append(r.pdf.stem)
        return r
    monkeypatch.setattr(pdf.Worker, "result", result)
    b = Book(stand_in, PartCache(None), tmp_path, most=2)
    b.add(Part("appendix", '<p id="app">slow</p>', APPENDIX, position=1000))
    for k in range(4):
        b.add(Part(f"body-{k}", f'<p id="v{k}">{k}</p>', BODY, position=1 + k))
    b.finish(LabelledPart("contents", lambda labels: '<p id="contents">c</p>', FRONT, position=-1),
             lambda texts: "".join(f'<div class="footer" data-footer="{t}"></div>' for t in texts),
             tmp_path / "book.pdf")
    assert read[:5] == ["body-0", "body-1", "body-2", "body-3", "appendix"]


def test_a_part_taken_from_the_cache_outlives_the_pruning_of_the_same_build(tmp_path, monkeypatch):
    """A build takes unchanged parts from the cache, then renders the changed ones, each put() pruning the
    oldest entries: a part it took must not be among them (its file is read again when the book is bound).
    Other builds (the test suite's reports share the cache) can have left newer entries than it."""
    monkeypatch.setattr(book_module, "CACHE_ENTRIES", 2)
    cache = PartCache(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    src = tmp_path / "part.pdf"
    src.write_bytes(b"%PDF-1.4 stand-in")

    def put(name: str) -> None:
        cache.put(cache.key(name), pdf.Rendered(src, 1, {}, []))

    put("unchanged")
    old = time.time() - 100
    for f in (tmp_path / "cache").iterdir():
        os.utime(f, (old, old))  # written long ago, before another build's entries
    put("another build's")
    taken = cache.get(cache.key("unchanged"))
    assert taken is not None
    put("changed part")  # over CACHE_ENTRIES: prunes the oldest
    assert taken.pdf.is_file(), "the part this build took from the cache was pruned before its binding"
    assert cache.get(cache.key("another build's")) is None
