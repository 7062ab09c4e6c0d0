"""Every CUDA source of every version, compiled by NVRTC 13.0 as `report run` compiles it on the
GPU machine (same options, sm_90a), without a GPU: through ctypes on the nvidia-cuda-nvrtc wheel
the test extra installs. nvcc is not enough: NVRTC's JIT mode refused v15's first step, a generic
lambda (a host function to it), after nvcc had built it, and the device session was spent finding out.

Each source a version compiles (its source closure's entry points; the headers come along
through their includes) is built with its own defaults (whole, ptxas included, where the defaults are what
runs: the version sets no CONFIG of the source's macros; else through the front end, the CONFIG's whole
build being the one that runs); with those defaults given on the command line,
as the harness gives a configuration (a header included before a source's ``#define STAGES 2`` sees
``-DSTAGES=2``: transform v12's ring template named a parameter STAGES and failed only that way, on
the GPU); and with every CONFIG and SWEEP entry whose keys are macros of that source (the flashattn
versions pass their configs as defines). A CONFIG is built whole, ptxas included, and must also be free
of ptxas's C7512 advisory (a serialised wgmma pipeline); a SWEEP entry goes through the front end, where
every failure a setting's value has caused so far was (a template parameter named like a setting, a
static_assert, an #if): ptxas takes about half of a whole build, 128 sweep points of them, and a
point that ptxas refuses on the GPU is a failed point of the recorded sweep, not a lost session. The
sweep points are marked ``sweep_points``: `make test-sweeps` (and CI) builds them, `make test` does not. The
versions whose sweep points must also be free of spills build them whole in their own tests
(tests/test_matmul_cpu.py, tests/test_flashattn_cpu.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cuda_build  # tests/cuda_build.py: each build once a session (a version's own tests build its CONFIG too)
from reporter import cuda
from reporter.assignments import list_assignments

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = cuda_build.NVRTC_LIBRARY
needs_nvrtc = pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")


DEFAULT = re.compile(r"^\s*#\s*ifndef\s+([A-Z_][A-Z0-9_]*)\s*\n\s*#\s*define\s+\1[ \t]+([^\s/]+)[ \t]*(?://[^\n]*)?$", re.MULTILINE)


def _builds() -> list:
    out = []
    for a in list_assignments(ROOT / "kernels"):
        for v in a.versions():
            for src in (f.path for f in v.closure().files if f.role == "cuda"):  # what it compiles
                text = "\n".join(f.read_text() for f in cuda.source_files(src))  # its headers' macros too
                macros = set(re.findall(r"^\s*#\s*ifndef\s+([A-Z_][A-Z0-9_]*)", text, re.MULTILINE))
                try:
                    config = getattr(v.load(), "CONFIG", None)
                except Exception:  # a version that cannot import without a GPU stack: its defaults are what runs
                    config = None
                # the defaults are what runs where the version sets no CONFIG of this source's macros: then a
                # whole build, ptxas included; else the CONFIG's whole build below is the one that runs, and
                # the defaults go through the front end
                runs_defaults = not (config and set(config) <= macros)
                out.append(pytest.param(src, None, False, not runs_defaults,
                                        id=f"{a.name}-{v.short}-{src.stem}-defaults"))
                defaults: dict[str, str] = {}
                for name, value in DEFAULT.findall(text):  # the first #ifndef default wins, as in the preprocessor
                    defaults.setdefault(name, value)
                # a setting is a number or another setting; a hook (OVL_RELEASE mbar_arrive, a version's
                # own `#define FULL_ARRIVALS 1` over the header's default) is set by a version file, never by -D
                fixed = {n for n in re.findall(r"^\s*#\s*define\s+([A-Z_][A-Z0-9_]*)", text, re.MULTILINE)} - {
                    n for n in re.findall(r"^\s*#\s*ifndef\s+([A-Z_][A-Z0-9_]*)\s*\n\s*#\s*define\s+\1\b", text, re.MULTILINE)}
                defaults = {n: v for n, v in defaults.items() if n not in fixed and re.match(r"[0-9A-Z(]", v)}
                if defaults:
                    # what -D changes is what the front end sees (a header that takes a setting's name for
                    # its own): parsed and type-checked only, a tenth of a build
                    out.append(pytest.param(src, defaults, False, True,
                                            id=f"{a.name}-{v.short}-{src.stem}-defaults-as-defines"))
                try:
                    mod = v.load()
                except Exception:  # a version that cannot import without a GPU stack keeps its defaults build
                    continue
                config = getattr(mod, "CONFIG", None)
                configs = ([config] if config else []) + [c for c in getattr(mod, "SWEEP", []) if c != config]
                for i, cfg in enumerate(configs):
                    if cfg and set(cfg) <= macros:
                        is_config = i == 0 and bool(config)
                        tag = "config" if is_config else "sweep-" + "-".join(f"{k}{val}" for k, val in cfg.items())
                        # a sweep point through the front end (what a setting's value can break: a template
                        # argument, a static_assert, an #if); the whole build, ptxas included, for the CONFIG
                        out.append(pytest.param(src, dict(cfg), is_config, not is_config,
                                                id=f"{a.name}-{v.short}-{tag}",
                                                marks=() if is_config else (pytest.mark.sweep_points,)))
    return out


BUILDS = _builds()


def test_the_cuda_versions_are_all_collected():
    ids = {p.id for p in BUILDS}
    for short in ("v06", "v08", "v13", "v14", "v15"):
        assert f"flashattn-{short}-config" in ids
    assert any(i.startswith("histogram-v05-") for i in ids)
    assert "transform-v12-v12_balanced-defaults-as-defines" in ids


@needs_nvrtc
@pytest.mark.parametrize("source,defines,is_config,front_only", BUILDS)
def test_nvrtc_builds_the_source(source, defines, is_config, front_only):
    build = (cuda_build.nvrtc_front if front_only else cuda_build.nvrtc)(source, defines)
    assert build.ok, build.log[-3000:]
    if is_config:
        assert "C7512" not in build.log, build.log[-3000:]


@needs_nvrtc
def test_nvrtc_refuses_a_lambda_that_nvcc_accepts(tmp_path):
    """The finding this test file exists for, pinned: JIT mode takes a generic lambda (an ``auto``
    parameter, as v15's first step had) for a host function, while a plain one compiles; annotating
    it ``__device__`` needs ``--extended-lambda``, which NVRTC does not take by default."""
    plain, generic = tmp_path / "plain.cu", tmp_path / "generic.cu"
    plain.write_text('extern "C" __global__ void k(float* x) { auto f = [&](int i) { x[i] += 1.f; }; f(threadIdx.x); }\n')
    generic.write_text('extern "C" __global__ void k(float* x) { auto f = [&](int i, auto t) { x[i] += t; }; '
                       'f(threadIdx.x, 1.f); }\n')
    assert cuda.nvrtc_compile_offline(plain, library=LIBRARY)[0]
    ok, log = cuda.nvrtc_compile_offline(generic, library=LIBRARY)
    assert not ok and "host function" in log


@needs_nvrtc
def test_the_front_end_alone_refuses_a_setting_a_header_takes_for_its_own_name(tmp_path):
    """The defaults-as-defines builds go through the front end only: what they exist to catch (transform
    v12's ring template named a parameter STAGES, and -DSTAGES=2 turned it into `template <int 2>`)
    is a parse error, which the front end reports as a whole build does."""
    (tmp_path / "ring.cuh").write_text("template <int STAGES> struct Ring { float slot[STAGES]; };\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "ring.cuh"\n#ifndef STAGES\n#define STAGES 2\n#endif\n'
                   'extern "C" __global__ void k(float* x) { Ring<STAGES> r; r.slot[0] = 1.f; x[0] = r.slot[0]; }\n')
    assert cuda_build.nvrtc_front(src).ok and cuda_build.nvrtc(src).ok
    front, whole = cuda_build.nvrtc_front(src, {"STAGES": 2}), cuda_build.nvrtc(src, {"STAGES": 2})
    assert not front.ok and not whole.ok and "ring.cuh" in front.log


@needs_nvrtc
def test_a_build_repeating_the_defaults_is_the_defaults_build_only_where_the_front_end_says_so(tmp_path):
    """tests/cuda_build.py answers a build whose defines repeat the source's defaults with the defaults
    build, where NVRTC's front end makes the same of both (a CONFIG is mostly its version's defaults):
    a define the source reads before its default (here a header's #ifdef) keeps a build of its own."""
    (tmp_path / "scale.cuh").write_text("#ifdef N\n#define SCALE 2.f\n#else\n#define SCALE 1.f\n#endif\n")
    kernel = '#ifndef N\n#define N 4\n#endif\nextern "C" __global__ void k(float* x) { x[threadIdx.x] *= N * SCALE; }\n'
    plain, early = tmp_path / "plain.cu", tmp_path / "early.cu"
    plain.write_text("#define SCALE 1.f\n" + kernel)
    early.write_text('#include "scale.cuh"\n' + kernel)
    for src in (plain, early):
        digest = cuda.source_digest(src)
        assert cuda_build._without_defaults(src, digest, (("N", 5),), "sm_90a") == (("N", 5),)  # not a default
        same = cuda_build._without_defaults(src, digest, (("N", 4),), "sm_90a") == ()
        assert same == (src is plain)
        # what the front end decided, the whole build confirms (PTX and machine code)
        assert (cuda.nvrtc_build_offline(src, defines={"N": 4}, library=LIBRARY)
                == cuda.nvrtc_build_offline(src, library=LIBRARY)) == same
