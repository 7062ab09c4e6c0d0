"""The prose rules, over every committed worklog and the reports built from them with the templates:
what a grader reads is about the kernels and the measurements, in one vocabulary, with units."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from conftest import ROOT

ASSIGNMENTS = ("flashattn", "histogram", "transform")
#: every committed worklog, for the rules that read the worklog itself (the three above are also built)
WORKLOGS = sorted(p.parent.name for p in (ROOT / "kernels").glob("*/worklog.md"))

#: Words about the machines the work ran on, or the team's working process, rather than the work.
NOT_ABOUT_THE_WORK = re.compile(
    r"\b(lent|loaned|borrowed|the machines? we|virtual machine|step limit|device sessions?|fresh machine|"
    r"the team's (?:device|working|tooling)|our tooling|session budget)\b", re.IGNORECASE)
#: A time or rate typed as digits in the worklog's prose, outside a binding: it must be bound to a record.
TYPED_FIGURE = re.compile(r"\d[\d,]*\.\d+\s?(ms|µs|us|GB/s|TFLOP/s)\b")
#: Terms the report uses that need the definition it gives before their first use.
DEFINED = ("host-bound",)


def _prose(markdown: str) -> str:
    """A worklog's prose: no front matter, bindings, code blocks or code spans."""
    if markdown.startswith("---"):
        markdown = markdown.split("---", 2)[2]
    markdown = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", "X", markdown, flags=re.DOTALL)
    markdown = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", markdown)


@pytest.fixture(scope="module")
def pages(built_reports) -> dict[str, BeautifulSoup]:
    return {name: BeautifulSoup(html, "html.parser") for name, html in built_reports.items()}


def _text(soup: BeautifulSoup) -> str:
    """What a reader reads: no styles, scripts, charts or code."""
    soup = BeautifulSoup(str(soup), "html.parser")
    for t in soup(["style", "script", "svg", "code", "pre"]):
        t.decompose()
    return " ".join(soup.get_text(" ").split())


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_no_literal_markdown_in_the_report(pages, name):
    text = _text(pages[name])
    assert "`" not in text, text[max(0, text.find("`") - 80): text.find("`") + 80]
    assert not re.search(r"\*\*\w|\w\*\*", text)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_report_is_about_the_work_not_the_machines(pages, name):
    found = [m.group(0) for m in NOT_ABOUT_THE_WORK.finditer(_text(pages[name]))]
    assert found == []


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_units_are_written_as_units(pages, name):
    text = _text(pages[name])
    assert not re.search(r"\d\s?us\b", text), re.search(r".{40}\d\s?us\b.{10}", text)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_terms_are_defined_before_their_first_use(pages, name):
    text = _text(pages[name]).lower()
    for term in DEFINED:
        definition = text.find(f"{term}: a run whose")
        assert definition != -1, f"'{term}' is never defined"
        assert text.find(term) == definition, f"'{term}' is used before it is defined: …{text[text.find(term) - 80:][:160]}"


@pytest.mark.parametrize("name", WORKLOGS)
def test_worklog_prose_binds_its_figures_and_ends_its_sentences(name):
    prose = _prose((ROOT / "kernels" / name / "worklog.md").read_text())
    assert [m.group(0) for m in TYPED_FIGURE.finditer(prose)] == []
    assert not NOT_ABOUT_THE_WORK.search(prose), NOT_ABOUT_THE_WORK.search(prose)
    for para in (p.strip() for p in re.split(r"\n\s*\n", prose) if p.strip()):
        if para.startswith(("#", "|", "-", "*", ">", "<")) or re.match(r"\d+\.", para):
            continue  # headings, tables, lists, quotes and raw HTML
        assert re.search(r"([.!?:)]|[.!?]\*+|X)$", para), f"{name}: a paragraph ends without a period: …{para[-80:]}"


def test_the_rules_catch_what_they_are_for():
    assert NOT_ABOUT_THE_WORK.search("on two of the three machines we were lent today")
    assert NOT_ABOUT_THE_WORK.search("ran on a loaned H100")
    assert TYPED_FIGURE.search("v16 runs in 13.72 ms")
    assert not TYPED_FIGURE.search(_prose("v16 runs in {{ v16.ms }} ms, within 1.02× of the goal"))
