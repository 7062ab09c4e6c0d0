"""Every version of every assignment, checked on its test cases on a real GPU (pytest -m gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.assignments import AssignmentError, list_assignments

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = list_assignments(ROOT / "kernels")


def _params() -> list:
    """Every version on every test case it runs (a case its CASES_WHERE leaves out is not a test of
    it); an assignment over a course folder that is not on this machine (kernels/swiglu needs a
    checkout of the course's repository in .course/) is skipped with the reason, not dropped."""
    out = []
    for a in ASSIGNMENTS:
        try:
            cases = [c for c in a.cases() if c != a.benchmark_case]
        except AssignmentError as e:
            out.append(pytest.param(a, None, None, id=f"{a.name}-unavailable",
                                    marks=pytest.mark.skip(reason=str(e))))
            continue
        for v in a.versions():
            try:
                runs = set(a.cases_of(v))
            except AssignmentError as e:  # a CASES_WHERE that names no parameter or matches no case: a failure
                out.append(pytest.param(a, v, e, id=f"{a.name}-{v.short}-cases_where"))
                continue
            out += [pytest.param(a, v, c, id=f"{a.name}-{v.short}-{c}") for c in cases if c in runs]
    return out


PARAMS = _params()


@pytest.mark.gpu
@pytest.mark.parametrize("assignment,version,case", PARAMS)
def test_version_passes_check(assignment, version, case):
    if isinstance(case, AssignmentError):
        pytest.fail(str(case))
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from reporter.cuda import track_launches
    from reporter.harness.check import check_output, poison_allocator

    spec = assignment.spec
    params = assignment.case(case)
    mod = version.load()
    with track_launches() as launched:
        for seed in (params["seed"], params["seed"] + 13):  # the case's seed and a ranked re-seed
            data = spec.generate_input(**{**params, "seed": seed})
            ref = spec.ref_kernel(data)
            poison_allocator(ref)
            out = mod.custom_kernel(data)
            torch.cuda.synchronize()
            # the harness's verdict: TOLERANCE, and the assignment's check_implementation where it has one
            # (matmul's holds each case to its own dtype's and N's tolerance)
            result = check_output(spec, data, out, ref, seed=seed)
            assert result.passed, f"{version.name} on {case} seed {seed}: {result.message}"
    # every file the CUDA compiler read for the kernels it ran is in the version's source closure
    compiled = {Path(p) for k in launched for p in k.module.sources}
    missing = compiled - set(version.closure().paths())
    assert not missing, f"{version.name} compiled files its source closure does not hold: {sorted(map(str, missing))}"
    _hold_the_machine_code(launched)


_OFFLINE: dict[tuple, str] = {}  # (source, options, kernel) -> the offline build's machine code, once a session
CODE_FIXTURE_ENV = "REPORT_CODE_FIXTURE"  # a JSON file to write what the device built (tests/fixtures/device_code.json)


def _hold_the_machine_code(launched) -> None:
    """Each kernel's machine code as the run records it (the cubin the device loaded, through CuPy's
    NVRTC) is the code the offline NVRTC wheel builds from the same source and options: the hash a
    same-code proof compares without a GPU is the one a GPU run records. With $REPORT_CODE_FIXTURE
    set, each build is also written there for the CPU test that holds this machine's offline
    builds to the device's (tests/test_sass.py)."""
    import json
    import os

    from reporter.cuda import find_nvrtc_library, kernel_code_sha256, nvrtc_cubin_offline
    from reporter.samecode import parse_options

    library = find_nvrtc_library()
    for k in launched:
        mod = k.module
        loaded = mod.code_sha256(k.name)
        assert loaded is not None, f"{k.name}: the loaded cubin's machine code could not be read"
        options = " ".join(o for o in mod.options if not o.startswith("-I"))
        key = (str(mod.path), options, k.name)
        if library is not None and key not in _OFFLINE:
            parsed = parse_options(options)
            assert parsed is not None, options
            _OFFLINE[key] = kernel_code_sha256(nvrtc_cubin_offline(mod.path, arch=parsed.arch, defines=parsed.defines,
                                                                   library=library), k.name)
        if key in _OFFLINE:
            assert _OFFLINE[key] == loaded, f"{k.name} ({Path(mod.path).name}, {options}): the device's build and " \
                                            f"the offline NVRTC's differ ({mod.compiler}, {library})"
        out = os.environ.get(CODE_FIXTURE_ENV)
        if out:
            path = Path(out)
            entries = json.loads(path.read_text()) if path.is_file() else []
            entry = {"source": Path(mod.path).resolve().relative_to(ROOT).as_posix(), "options": options,
                     "kernel": k.name, "compiler": mod.compiler, "code_sha256": loaded,
                     "sources": {Path(p).resolve().relative_to(ROOT).as_posix(): h
                                 for p, h in sorted(mod.sources.items())}}
            if entry not in entries:
                path.write_text(json.dumps([*entries, entry], indent=1) + "\n")
