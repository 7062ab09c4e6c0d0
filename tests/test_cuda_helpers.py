"""The CUDA sources share device helpers through headers instead of copying them (CPU only, no
compiler): no __device__ function is defined in two files under kernels/; every shared header
under kernels/common/ is guarded, says what it holds and the append-only rule, and is used; every
flashattn CUDA version from v06 on reaches the sm_90 headers. That moving a helper left the code
unchanged is tools/same_ptx.py's job (the PTX of every build, before and after)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from cuda_text import definitions_in  # tests/cuda_text.py: the one reader of CUDA definitions

from reporter import cuda

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
COMMON = KERNELS / "common"
VERSION_RE = re.compile(r"^v(\d{2,3})_\w*\.cu$")

# Copies the histogram versions still carry (each version kept whole), name -> the folder they are
# in; a later change moves them. Listed so that a new copy, there or anywhere, fails, and checked so
# that the list cannot go stale.
KNOWN_COPIES: dict[str, str] = {}  # name -> the assignment folder where a copy is tolerated


def _sources(kernels: Path = KERNELS) -> list[Path]:
    return sorted(p for p in kernels.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file())


def _versions() -> list[Path]:
    return sorted(p for p in KERNELS.glob("*/*.cu") if VERSION_RE.match(p.name))


def device_definitions(path: Path) -> list[tuple[str, int]]:
    """(name, line) of each top-level __device__ function defined in ``path``."""
    return [(d.name, d.line) for d in definitions_in(path)]


def test_the_definition_scanner_reads_definitions_not_declarations(tmp_path):
    src = tmp_path / "x.cu"
    src.write_text(
        "__device__ __forceinline__ void hook(const float (&o)[64], int lane);\n"
        "template <int N>\n__device__ __forceinline__ void fence(float (&d)[N])\n{\n}\n"
        "__device__ __forceinline__ u32 one() { return 1u; }\n"
        "__device__ unsigned long long g_trace[64];\n"
        "    __device__ inline void nested() {}\n"
    )
    assert device_definitions(src) == [("fence", 3), ("one", 6)]


def copies(kernels: Path) -> dict[str, list[str]]:
    """Each __device__ function defined in more than one file under ``kernels``, with its places
    (folder/file:line, relative to ``kernels``); overloads within one file are no copies."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in _sources(kernels):
        for name, line in device_definitions(path):
            where[name].append(f"{path.relative_to(kernels).as_posix()}:{line}")
    return {name: places for name, places in where.items() if len({p.rsplit(":", 1)[0] for p in places}) > 1}


def test_a_copy_is_found(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "v01_x.cu").write_text("__device__ __forceinline__ u32 one() { return 1u; }\n")
    assert copies(tmp_path) == {"one": ["a/v01_x.cu:1", "b/v01_x.cu:1"]}


def test_no_device_function_is_defined_in_two_files():
    found = copies(KERNELS)
    unexpected = {
        name: places
        for name, places in found.items()
        if name not in KNOWN_COPIES or any(not p.startswith(KNOWN_COPIES[name] + "/") for p in places)
    }
    assert not unexpected, "defined in more than one file (move it to a shared header): " + "; ".join(
        f"{name} in {', '.join(places)}" for name, places in sorted(unexpected.items())
    )
    stale = set(KNOWN_COPIES) - set(found)
    assert not stale, f"no longer copied, remove from KNOWN_COPIES: {sorted(stale)}"


def _common_headers() -> list[Path]:
    return sorted(COMMON.rglob("*.cuh"))


def test_there_are_shared_sm90_headers():
    names = {p.name for p in (COMMON / "sm90").glob("*.cuh")}
    assert {"ptx.cuh", "mbarrier.cuh", "wgmma.cuh", "tma.cuh", "cp_async.cuh", "cluster.cuh"} <= names


@pytest.mark.parametrize("header", _common_headers(), ids=lambda p: str(p.relative_to(COMMON)))
def test_a_shared_header_is_guarded_and_says_what_it_holds_and_the_rule(header):
    text = header.read_text(encoding="utf-8")
    assert text.startswith("//"), "starts with a comment saying what it holds"
    head, sep, _ = text.partition("#pragma once")
    assert sep, "no #pragma once"
    assert "Append-only" in head, "the leading comment states the append-only rule"
    for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.MULTILINE):
        assert (KERNELS / name).is_file(), f"includes {name!r}: shared headers are named by their path from kernels/"


def test_every_shared_header_is_included_by_a_version():
    reached = {inc.path for v in _versions() for inc in cuda.includes(v)}
    unused = [str(h.relative_to(ROOT)) for h in _common_headers() if h.resolve() not in reached]
    assert not unused, f"included by no version: {unused}"


def _flashattn_cuda_versions() -> list[Path]:
    return [p for p in _versions() if p.parent.name == "flashattn" and int(VERSION_RE.match(p.name).group(1)) >= 6]


def test_the_flashattn_cuda_versions_are_found():
    names = {p.stem[:3] for p in _flashattn_cuda_versions()}
    assert {"v06", "v15", "v21"} <= names


@pytest.mark.parametrize("source", _flashattn_cuda_versions(), ids=lambda p: p.stem)
def test_a_flashattn_cuda_version_reaches_the_sm90_headers(source):
    names = [inc.name for inc in cuda.includes(source)]
    assert any(n.startswith("common/sm90/") for n in names), f"{source.name} includes no common/sm90/ header: {names}"


def test_a_kernel_whose_handle_a_version_takes_counts_as_launched():
    """A version with a launch plan of its own (histogram v07) takes CuPy's function and launches it
    itself: taking it inside track_launches() counts, so the run still records the kernel's build."""
    from reporter.cuda import CudaKernel, track_launches

    raw = object()
    mine, harness = CudaKernel("mine", None, raw), CudaKernel("harness", None, object(), tracked=False)  # type: ignore[arg-type]
    with track_launches() as launched:
        assert mine.function is raw and harness.function is not None
        mine.function  # noqa: B018  (once each)
    assert launched == [mine]
    assert mine.function is raw  # outside tracking: the handle, nothing noted


def test_no_version_includes_another_versions_source():
    """Shared code lives in headers: a version's .cu never includes another version's .cu (an edit to
    that version would silently change this one, and its module would carry that version's kernel)."""
    for path in _sources():
        for inc in cuda.includes(path):
            assert not VERSION_RE.match(inc.path.name), f"{path.relative_to(KERNELS)} includes {inc.name}"


def test_the_names_a_text_calls_are_what_calls_finds_name_by_name():
    """reporter.cudatext.called_names (one pass, what reached() uses) against calls() (a search a
    name) on every file and helper body under kernels/ and on a text made to tell them apart: a
    member call, a longer name ending in a shorter one, template arguments, a comparison."""
    from reporter.cudatext import called_names, calls, code

    tricky = ("x.f(1); g_f(2); h<int, 4>(3); k < n && m(4); p<q<r>>(5); s\n(6); t < u > v; w<a(b)>(7);"
              " tile_of(c)")
    texts = [tricky] + [code(p.read_text(encoding="utf-8")) for p in _sources()]
    texts += [d.text for p in _sources() for d in definitions_in(p)]
    names = {d.name for p in _sources() for d in definitions_in(p)} | {
        "f", "g_f", "h", "k", "m", "p", "q", "r", "s", "t", "u", "v", "w", "a", "tile_of", "of"}
    for text in texts:
        found = called_names(text)
        assert {n for n in names if calls(text, n)} == found & names, text[:200]
    assert called_names(tricky) >= {"g_f", "h", "m", "s", "a", "tile_of"} and "f" not in called_names(tricky)
