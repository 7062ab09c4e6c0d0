"""A version's source closure (reporter.closure): what a record hashes, an export embeds and the
compile cache key covers. On the real versions and on a toy project with a shared header; and the
CUDA part of every version's closure against the headers NVRTC itself reads compiling its sources
(not the include scanner the closure is built on, so the two can disagree)."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest

from reporter import cuda
from reporter.assignments import get_assignment, list_assignments
from reporter.closure import ClosureError, source_closure
from reporter.export import ExportError, collect

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "kernels" / "flashattn"
LIBRARY = cuda.find_nvrtc_library()
needs_nvrtc = pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")


def rels(version_path: Path) -> list[str]:
    return source_closure(version_path).rels()


def test_v14_holds_its_own_source_and_not_the_ones_it_never_compiles():
    got = rels(FLASH / "v14_multicast.py")
    assert got[:2] == ["v14_multicast.py", "v14_multicast.cu"]
    assert "v06_wgmma.cu" not in got and "v13_tma.cu" not in got


def test_a_version_that_names_another_source_carries_it():
    """v16 launches v15's kernel (``v15.SOURCE``); histogram v07 launches v05's."""
    assert "v15_kv176_multicast.cu" in rels(FLASH / "v16_launch_plan.py")
    assert "v05_persistent.cu" in rels(ROOT / "kernels" / "histogram" / "v07_lean_launch.py")


def test_a_version_that_calls_another_versions_kernel_carries_its_source(tmp_path):
    """v22 runs v21's and v16's kernels through their custom_kernel: both sources (and v21's headers) are
    in its closure; a toy version that calls a sibling's make_kernel, or imports its custom_kernel,
    carries the sibling's .cu, and one that takes only a constant does not."""
    got = rels(FLASH / "v22_shape_dispatch.py")
    for name in ("v21_staged_stores.cu", "attn_sm90_double_q.cuh", "v15_kv176_multicast.cu"):
        assert name in got
    (tmp_path / "v01_a.py").write_text('from pathlib import Path\nSOURCE = Path(__file__).with_suffix(".cu")\n'
                                       "BLOCK = 64\ndef make_kernel(c):\n    return None\ncustom_kernel = None\n")
    (tmp_path / "v01_a.cu").write_text("// a kernel\n")
    (tmp_path / "v02_b.py").write_text("import v01_a as a\ncustom_kernel = a.make_kernel({})\n")
    (tmp_path / "v03_c.py").write_text("from v01_a import custom_kernel\n")
    (tmp_path / "v04_d.py").write_text("import v01_a as a\nBLOCK = a.BLOCK\n")
    for v in ("v02_b", "v03_c"):
        assert "v01_a.cu" in source_closure(tmp_path / f"{v}.py").rels(), v
    assert "v01_a.cu" not in source_closure(tmp_path / "v04_d.py").rels()


def test_includes_are_followed_transitively():
    """v21.cu includes v19's kernel (attn_sm90_double_q.cuh), which includes v15's steps
    (attn_sm90_kv176.cuh) and trace.cuh; no other version's source."""
    got = rels(FLASH / "v21_staged_stores.py")
    for name in ("v21_staged_stores.cu", "attn_sm90_double_q.cuh", "attn_sm90_kv176.cuh", "trace.cuh",
                 "common/sm90/tma.cuh"):
        assert name in got
    assert not {"v19_double_q.cu", "v15_kv176_multicast.cu"} & set(got)
    assert "v17_persistent.cu" not in got  # v19's .py imports v17's helpers, its .cu does not include v17's


@pytest.mark.parametrize("a", [a.name for a in list_assignments(ROOT / "kernels")])
def test_records_exports_and_builds_agree_on_every_version(a):
    """The snapshot a run records and the files an export embeds are the same closure, and
    every CUDA source in it is covered by the compile cache key of the source that reaches it."""
    assignment = get_assignment(ROOT / "kernels", a)
    for v in assignment.versions():
        closure = v.closure()
        snap = v.snapshot(ROOT)
        assert [f.path for f in snap.files] == [p.relative_to(ROOT).as_posix() for p in closure.paths()]
        try:
            files, _, _, _ = collect(ROOT, v)
        except ExportError as e:  # a version built on the package itself cannot be exported
            assert "which a submission cannot carry" in str(e)
        else:
            assert [f.rel for f in files if not f.rel.startswith("reporter/")] == closure.rels()
        cu = [f.path for f in closure.files if f.role == "cuda"]
        reached = {p for src in cu for p in cuda.source_files(src)}
        assert {f.path for f in closure.files if f.is_cuda} <= reached, v.name


# --------------------------------------------------------------------------- what NVRTC reads


@functools.cache
def nvrtc_read(source: Path) -> frozenset[Path]:
    """The source and every header NVRTC read compiling it (one compile a source, however many
    versions compile it), with the options and the working folder of `report run`'s worker."""
    return frozenset({source.resolve(), *cuda.nvrtc_headers_offline(source, library=LIBRARY)})


def cuda_part_against_nvrtc(closure_cuda: set[Path], sources: list[Path]) -> tuple[set[Path], set[Path]]:
    """(files NVRTC read that the closure lacks, files in the closure NVRTC never read)."""
    read = set().union(*(nvrtc_read(s) for s in sources)) if sources else set()
    return read - closure_cuda, closure_cuda - read


VERSIONS = [pytest.param(v, id=f"{a.name}-{v.short}") for a in list_assignments(ROOT / "kernels") for v in a.versions()]


@needs_nvrtc
@pytest.mark.parametrize("version", VERSIONS)
def test_the_cuda_closure_is_what_nvrtc_reads(version, monkeypatch):
    """Every .cu a version compiles and every header NVRTC reads compiling it (syntax only, default
    defines, sm_90a, from the repository's root as the worker runs) is in the version's closure, and
    the closure holds no CUDA file NVRTC does not read. A header the scanner misses (an include
    through a macro, one found from the working folder) would leave a record blind to its edits;
    one it adds wrongly would call a figure stale. A header included only under a define that the
    defaults leave off would show here as closure-only: compile with that define to check it."""
    monkeypatch.chdir(ROOT)
    closure = version.closure()
    sources = [f.path for f in closure.files if f.role == "cuda"]
    missed, extra = cuda_part_against_nvrtc({f.path.resolve() for f in closure.files if f.is_cuda}, sources)
    assert not missed, f"NVRTC reads what {version.name}'s closure lacks: {sorted(map(str, missed))}"
    assert not extra, f"{version.name}'s closure holds what NVRTC never reads: {sorted(map(str, extra))}"


@needs_nvrtc
def test_the_nvrtc_check_sees_what_the_scanner_misses_and_adds(tmp_path, monkeypatch):
    """The two lists come from different readers: an include through a macro is read by NVRTC and
    missed by the scanner; one under ``#if 0`` is listed by the scanner and never read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "macro.cuh").write_text("#pragma once\n")
    (tmp_path / "dead.cuh").write_text("#pragma once\n")
    (tmp_path / "plain.cuh").write_text("#pragma once\n")
    src = tmp_path / "v01.cu"
    src.write_text('#include "plain.cuh"\n#define HEADER "macro.cuh"\n#include HEADER\n'
                   '#if 0\n#include "dead.cuh"\n#endif\nextern "C" __global__ void k() {}\n')
    scanned = {src.resolve(), *(i.path for i in cuda.includes(src))}
    missed, extra = cuda_part_against_nvrtc(scanned, [src])
    assert missed == {(tmp_path / "macro.cuh").resolve()} and extra == {(tmp_path / "dead.cuh").resolve()}


# --------------------------------------------------------------------------- a toy project with a shared header


def project(root: Path) -> Path:
    files = {
        "kernels/common/sm90/barrier.cuh": "#pragma once\n__device__ __forceinline__ void bar_a() {}\n",
        "kernels/common/sm90/copy.cuh": '#pragma once\n#include "common/sm90/barrier.cuh"\n',
        "kernels/toy/assignment.py": 'TITLE = "toy"\nCASES = {"benchmark": {"seed": 1}}\n',
        "kernels/toy/v01_plain.py": '''
            """No shared header."""
            from pathlib import Path
            SOURCE = Path(__file__).with_suffix(".cu")
            def custom_kernel(data):
                return data
        ''',
        "kernels/toy/v01_plain.cu": 'extern "C" __global__ void k() {}\n',
        "kernels/toy/v02_copy.py": '''
            """Includes the copy header, which includes the barrier header."""
            from pathlib import Path
            import v01_plain
            SOURCE = Path(__file__).with_suffix(".cu")
            def custom_kernel(data):
                return data
        ''',
        "kernels/toy/v02_copy.cu": '#include "common/sm90/copy.cuh"\nextern "C" __global__ void k() {}\n',
        "kernels/toy/v03_barrier.py": '''
            """Includes the barrier header only."""
            from pathlib import Path
            SOURCE = Path(__file__).with_suffix(".cu")
            def custom_kernel(data):
                return data
        ''',
        "kernels/toy/v03_barrier.cu": '#include "common/sm90/barrier.cuh"\nextern "C" __global__ void k() {}\n',
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def digests(root: Path) -> dict[str, str]:
    a = get_assignment(root / "kernels", "toy")
    return {v.short: v.snapshot(root).digest for v in a.versions()}


def test_editing_a_shared_header_changes_exactly_the_versions_that_reach_it(tmp_path):
    root = project(tmp_path)
    toy = root / "kernels" / "toy"
    assert rels(toy / "v02_copy.py") == ["v02_copy.py", "v02_copy.cu", "common/sm90/copy.cuh",
                                         "common/sm90/barrier.cuh", "v01_plain.py"]
    before = digests(root)
    keys = {n: cuda.source_digest(toy / f"{n}.cu") for n in ("v01_plain", "v02_copy", "v03_barrier")}
    barrier = root / "kernels" / "common" / "sm90" / "barrier.cuh"
    barrier.write_text(barrier.read_text() + "__device__ __forceinline__ void bar_b() {}\n")
    after = digests(root)
    assert [s for s in before if before[s] != after[s]] == ["v02", "v03"]
    assert cuda.source_digest(toy / "v01_plain.cu") == keys["v01_plain"]
    assert cuda.source_digest(toy / "v02_copy.cu") != keys["v02_copy"]  # through copy.cuh
    assert cuda.source_digest(toy / "v03_barrier.cu") != keys["v03_barrier"]

    copy = root / "kernels" / "common" / "sm90" / "copy.cuh"
    copy.write_text(copy.read_text() + "// a comment\n")
    again = digests(root)
    assert [s for s in after if after[s] != again[s]] == ["v02"]


def test_the_export_places_a_shared_header_where_the_compiler_finds_it(tmp_path):
    root = project(tmp_path)
    v = get_assignment(root / "kernels", "toy").version("v02")
    files, _, _, _ = collect(root, v)
    placed = {f.rel: f.origin for f in files}
    assert placed["common/sm90/barrier.cuh"] == "kernels/common/sm90/barrier.cuh"
    # in the submission's folder the source's own folder comes first on the include path
    assert cuda.include_dirs(Path("/tmp/sub/v02_copy.cu"))[0] == Path("/tmp/sub").resolve()


def test_an_import_cycle_and_a_header_outside_the_include_folders_are_named(tmp_path):
    root = project(tmp_path)
    toy = root / "kernels" / "toy"
    (toy / "v04_a.py").write_text("import v05_b\ndef custom_kernel(d):\n    return d\n")
    (toy / "v05_b.py").write_text("import v04_a\n")
    with pytest.raises(ClosureError, match="import cycle.*v04_a -> v05_b -> v04_a"):
        source_closure(toy / "v04_a.py")
    (tmp_path / "elsewhere.cuh").write_text("#pragma once\n")
    (toy / "v06_far.py").write_text('from pathlib import Path\nSOURCE = Path(__file__).with_suffix(".cu")\n')
    (toy / "v06_far.cu").write_text('#include "../../elsewhere.cuh"\n')
    with pytest.raises(ClosureError, match="elsewhere.cuh: a header reached from outside"):
        source_closure(toy / "v06_far.py")
