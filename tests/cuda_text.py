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

import re
from pathlib import Path

from reporter import cudatext as _cudatext
from reporter.cudatext import (Definition, calls, closure_text, code, definitions, definitions_in,  # noqa: F401
                               own_code, reached, reached_code)


def definition(path: Path, name: str) -> str:
    """The code of the one ``__device__`` function ``name`` that ``path`` reaches. Fails the test
    if ``path``'s closure defines it nowhere or more than once."""
    found = [d for d in definitions(path) if d.name == name]
    where = [d.file.name for d in found]
    assert len(found) == 1, f"{name}: defined {len(found)} times in the closure of {path.name} ({where})"
    return found[0].text


def macro_value(path: Path, name: str, defines: dict[str, int] | None = None) -> int:
    """The integer value of macro ``name`` as the compiler sees it in ``path``: the preprocessor's
    own macro table (``gcc -E -dM`` with the include folders NVRTC is given), the definition
    expanded through the other macros and evaluated. A default written as another macro
    (``V_LBO KV_HALF_BYTES``) is followed to its number."""
    import subprocess

    from reporter.cuda import include_dirs

    cmd = ["gcc", "-E", "-dM", "-x", "c++", *(f"-I{d}" for d in include_dirs(path)),
           *(f"-D{k}={v}" for k, v in (defines or {}).items()), str(path)]
    table: dict[str, str] = {}
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"#define (\w+) (.*)$", line)
        if m:
            table[m.group(1)] = m.group(2)
    assert name in table, f"{path.name}: macro {name} is not defined"

    def expand(text: str, depth: int = 0) -> str:
        assert depth < 20, f"{name}: macro expansion too deep"
        return re.sub(r"[A-Za-z_]\w*", lambda m: f"({expand(table[m.group(0)], depth + 1)})"
                      if m.group(0) in table else m.group(0), text)

    expr = re.sub(r"(\d+)(?:ull|ul|u|ll|l)\b", r"\1", expand(table[name]), flags=re.IGNORECASE)
    return int(eval(expr, {"__builtins__": {}}))  # noqa: S307 - digits and operators only, from our own headers


_STRUCT = re.compile(r"^struct\s+(\w+)\s*\{", re.MULTILINE)
_GLOBAL_FN = re.compile(r'^(?:extern\s+"C"\s+)?__global__\b[^;{]*?\b(\w+)\s*\(', re.MULTILINE)


def compiled_code(path: Path, defines: dict[str, int] | None = None) -> str:
    """The text the compiler reads for ``path`` with ``defines``: preprocessed (``gcc -E -P``, the
    include folders NVRTC is given), so every ``#if`` is decided and every hook macro expanded."""
    import subprocess

    from reporter.cuda import include_dirs

    cmd = ["gcc", "-E", "-P", "-x", "c++", *(f"-I{d}" for d in include_dirs(path)),
           *(f"-D{k}={v}" for k, v in (defines or {}).items()), str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def kernel_code(path: Path, defines: dict[str, int] | None = None) -> str:
    """The ``__global__`` kernels of :func:`compiled_code`, hooks expanded, wherever they are written."""
    text = compiled_code(path, defines)
    kernels = []
    for m in _GLOBAL_FN.finditer(text):
        end = _cudatext._through_body(text, text.index("(", m.start(1)))
        if end is not None:
            kernels.append(text[m.start():end])
    assert kernels, f"{path.name}: no __global__ kernel in the compiled text"
    return "\n".join(kernels)


def run_code(path: Path, defines: dict[str, int] | None = None) -> str:
    """The code ``path``'s kernels run, wherever they are written: each ``__global__`` kernel of
    :func:`compiled_code` and, transitively, every top-level ``__device__`` function they call.
    Hooks are resolved: a version that sets ``RESCALE_O rescale_o_lazy`` runs rescale_o_lazy."""
    text = compiled_code(path, defines)
    kernels = [kernel_code(path, defines)]
    helpers = []
    for m in _cudatext._DEVICE_FN.finditer(text):
        end = _cudatext._through_body(text, m.end() - 1)
        if end is not None:
            helpers.append((m.group(1), text[m.start():end]))
    for m in _STRUCT.finditer(text):  # a functor a kernel names (produce_tma<MulticastTile>) runs its methods
        end = text.find("\n};", m.end())
        if end != -1:
            helpers.append((m.group(1), text[m.start():end + 3]))
    found, taken, frontier = list(kernels), set(), list(kernels)
    while frontier:
        body = frontier.pop(0)
        for i, (name, helper) in enumerate(helpers):
            named = calls(body, name) or (helper.startswith("struct") and re.search(rf"\b{name}\b", body))
            if i not in taken and named:
                taken.add(i)
                found.append(helper)
                frontier.append(helper)
    return "\n".join(found)
