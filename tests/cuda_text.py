"""Reading CUDA sources in tests: :mod:`reporter.cudatext`, and one reader of the tests' own.

A text check on a version asks one of three questions, and each has its own reader:
- what the version's own file says: ``own_code`` (comments removed), ``calls``;
- what one helper it calls does: ``definition`` finds the one ``__device__`` function of that name
  among the files the version reaches through ``#include "…"``;
- what code the version runs: ``reached_code`` is its own file plus every helper of its include
  closure that it calls, directly or through another helper.

Absence checks ("no cp.async copy", "no trap") read ``reached_code``, never the whole include
closure: a header holds more helpers than any one version calls (v13 includes cp_async.cuh and never
copies with cp.async; mbarrier.cuh holds v06's trapping wait beside v08's faulting one).
"""

from __future__ import annotations

from pathlib import Path

from reporter.cudatext import (Definition, calls, closure_text, code, definitions, definitions_in,  # noqa: F401
                               own_code, reached, reached_code)


def definition(path: Path, name: str) -> str:
    """The code of the one ``__device__`` function ``name`` that ``path`` reaches. Fails the test
    if ``path``'s closure defines it nowhere or more than once."""
    found = [d for d in definitions(path) if d.name == name]
    where = [d.file.name for d in found]
    assert len(found) == 1, f"{name}: defined {len(found)} times in the closure of {path.name} ({where})"
    return found[0].text
