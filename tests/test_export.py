"""`report export`: one self-contained submission.py per version, imported in a Python where
neither this package nor kernels/ can be found. The CPU tests check what is embedded and that
it imports; the GPU test (pytest -m gpu) runs every version's export against the reference."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from reporter import store
from reporter.analysis.diff import format_ms
from reporter.assignments import list_assignments
from reporter.cli import app
from reporter.export import EXPORTED_PREFIX

runner = CliRunner()

#: the reporter.cuda package, which an export of a version that compiles CUDA carries whole
CUDA_PACKAGE = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "reporter" / "cuda").glob("*.py")
                      if p.name != "__main__.py")
# what each export must carry, as paths relative to the repository
EXPORTS = {
    ("flashattn", "v04"): ["kernels/flashattn/v04_exp2.py"],
    ("flashattn", "v05"): ["kernels/flashattn/v05_tma.py", "kernels/flashattn/v04_exp2.py"],
    ("histogram", "v05"): ["kernels/histogram/v05_persistent.py", "kernels/histogram/v05_persistent.cu",
                           "kernels/histogram/histogram_persistent.cuh", "kernels/histogram/histogram_bin_major.cuh",
                           "kernels/histogram/histogram.cuh", "kernels/histogram/histogram_trace.cuh",
                           "kernels/common/sm90/ptx.cuh", "kernels/histogram/histogram_io.py", *CUDA_PACKAGE],
}
HAVE_TRITON = importlib.util.find_spec("triton") is not None


def report(*args: str | Path, root: Path = ROOT):
    return runner.invoke(app, ["export", *map(str, args), "--root", str(root)])


def clean_python(script: str, cwd: Path, extra_path: tuple[Path, ...] = (), timeout_s: float = 120) -> dict:
    """Run ``script`` in a Python that has the installed packages (torch, numpy) but not this
    project: ``-S`` skips the .pth files (so the editable install's finder stays off), and no
    path entry that holds reporter/ or kernels/ is passed on. The script prints one JSON line."""
    keep = [p for p in sys.path if p and Path(p).is_dir()
            and not (Path(p) / "reporter").exists() and not (Path(p) / "kernels").exists()
            and not (Path(p) / "conftest.py").exists()]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, extra_path), *keep])
    env["PYTHONNOUSERSITE"] = "1"
    prelude = textwrap.dedent("""
        import json, sys
        def _absent(name):
            try:
                __import__(name)
            except ImportError:
                return True
            return False
        assert _absent("reporter"), "the reporter package is importable: the test would prove nothing"
        assert _absent("kernels"), "kernels/ is importable: the test would prove nothing"
    """)
    res = subprocess.run([sys.executable, "-S", "-c", prelude + textwrap.dedent(script)], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=timeout_s, check=False)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    return json.loads(res.stdout.strip().splitlines()[-1])


def embedded(path: Path) -> dict[str, str]:
    """The ``_FILES`` of a submission, read without importing it."""
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "_FILES":
            value = node.value
            if isinstance(value, ast.Subscript):  # r'''\n...'''[1:]
                out[ast.literal_eval(node.targets[0].slice)] = ast.literal_eval(value.value)[1:]
            else:
                out[ast.literal_eval(node.targets[0].slice)] = ast.literal_eval(value)
    return out


def header(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[tuple[str, str], tuple[Path, str]]:
    out = tmp_path_factory.mktemp("exports")
    done = {}
    for assignment, version in EXPORTS:
        path = out / f"{assignment}_{version}" / "submission.py"
        result = report(assignment, version, "--format", "cs149", "-o", path)
        assert result.exit_code == 0, result.output
        done[(assignment, version)] = (path, result.output)
    return done


@pytest.mark.parametrize("key", list(EXPORTS), ids=lambda k: "-".join(k))
def test_export_embeds_the_sources_and_names_their_sha256(exported, key):
    path, output = exported[key]
    assert "written" in output and "submission.py" in output and "custom_kernel(data)" in output
    text = header(path)
    files = embedded(path)
    for rel in EXPORTS[key]:
        real = ROOT / rel
        sha = hashlib.sha256(real.read_bytes()).hexdigest()
        assert any(line.split() == [rel, sha] for line in text.splitlines()), f"{rel} {sha} not in the header"
        inside = rel.removeprefix(f"kernels/{key[0]}/").removeprefix("kernels/")  # kernels/common/... as common/...
        assert files[inside] == real.read_text(encoding="utf-8"), f"{inside} is not embedded verbatim"
    assert set(files) - {"reporter/__init__.py"} == {r.removeprefix(f"kernels/{key[0]}/").removeprefix("kernels/")
                                                      for r in EXPORTS[key]}
    compile(path.read_text(encoding="utf-8"), str(path), "exec")


@pytest.mark.parametrize("key", list(EXPORTS), ids=lambda k: "-".join(k))
def test_header_states_the_recorded_measurement(exported, key):
    """The figure, GPU and command come from the run that stands for the version (reporter.standing),
    as in the report and `report list`; a run of other code is said to be, proven the same or not."""
    from reporter.standing import figure, standing_run

    path, _ = exported[key]
    assignment, handle = key
    version = next(d.name for d in (ROOT / "logs" / assignment).iterdir() if d.name.startswith(handle + "_"))
    runs = [r for r in store.runs(ROOT / "logs", assignment, version) if r.case_name == "benchmark"]
    chosen = standing_run(runs, version, "benchmark", gpu="h100")
    if chosen is None or not chosen.ok:
        pytest.skip(f"no timed benchmark record of {assignment} {version}")
    from reporter.assignments import get_assignment
    from reporter.samecode import code_status, tree_files

    code = code_status(chosen.code, tree_files(get_assignment(ROOT / "kernels", assignment).version(version), ROOT),
                       store.same_code(ROOT / "logs", assignment, version))
    text = " ".join(header(path).split())
    assert f"{chosen.device.name}: {format_ms(figure(chosen).ms, 5)}, the {figure(chosen).how}" in text
    assert f"run {chosen.run_id}" in text
    assert f"measured with `{chosen.command}`" in text
    assert f"Re-measure: report run {assignment} -v {handle} -c benchmark" in text
    assert "CONFIG:" in text and "Source: commit" in text
    # the code the run recorded against the code embedded: one answer (reporter.samecode), said when not the same
    assert (" -- its code has" in text) == (code.state != "current")
    assert ("proven to compile to the same kernels" in text) == (code.state == "proven")
    assert ("the figure is the earlier code's" in text) == (code.state == "changed")


def test_histogram_export_runs_without_the_repository(exported):
    """Imported from a bare folder: the .cu is found beside the embedded module, reporter.cuda is
    the embedded one, and the temporary folder is gone after the process ends."""
    path, _ = exported[("histogram", "v05")]
    got = clean_python("""
        from pathlib import Path
        import submission
        v = sys.modules["v05_persistent"]
        cuda = sys.modules["reporter.cuda"]
        print(json.dumps(dict(
            callable=callable(submission.custom_kernel), version_file=v.__file__, cu=str(v.SOURCE),
            cu_text=Path(v.SOURCE).read_text(encoding="utf-8"), cuda_file=cuda.__file__,
            same_loader=v.load_module is cuda.load_module is sys.modules["reporter.cuda.build"].load_module,
            launch_once=sys.modules["reporter.cuda.build"].CudaKernel is sys.modules["reporter.cuda.launch"].CudaKernel,
            modules=sorted(n for n in sys.modules if n.startswith("reporter.cuda.")))))
    """, cwd=path.parent)
    assert got["callable"] and got["same_loader"] and got["launch_once"]  # each module of the package loaded once
    assert got["modules"] == sorted(p.removesuffix(".py").replace("/", ".") for p in CUDA_PACKAGE
                                    if not p.endswith("__init__.py"))
    folder = Path(got["version_file"]).parent
    assert Path(got["cu"]) == folder / "v05_persistent.cu"
    assert got["cu_text"] == (ROOT / "kernels/histogram/v05_persistent.cu").read_text(encoding="utf-8")
    assert Path(got["cuda_file"]) == folder / "reporter" / "cuda" / "__init__.py"
    assert not folder.is_relative_to(ROOT)
    assert not folder.exists(), "the submission's temporary folder outlived its process"


def test_an_export_imported_where_reporter_cuda_is_loaded_uses_its_own_and_gives_the_host_its_back(exported):
    """As `report reverify` imports an earlier export in a process that has this package: the
    version runs on the embedded reporter.cuda package (all of its modules), and the host's
    modules are in sys.modules again afterwards."""
    path, _ = exported[("histogram", "v05")]
    script = textwrap.dedent(f"""
        import importlib.util, json, sys
        import reporter.cuda, reporter.cuda.build
        host = {{n: m for n, m in sys.modules.items() if n == "reporter" or n.startswith("reporter.cuda")}}
        spec = importlib.util.spec_from_file_location("before", {str(path)!r})
        sub = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sub)
        v = sys.modules["v05_persistent"]
        print(json.dumps(dict(
            restored=all(sys.modules[n] is m for n, m in host.items()),
            host_file=reporter.cuda.build.__file__, embedded_file=v.load_module.__globals__["__file__"],
            own=v.load_module is not reporter.cuda.load_module)))
    """)
    res = subprocess.run([sys.executable, "-c", script], cwd=path.parent, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["restored"] and got["own"]
    assert Path(got["host_file"]) == ROOT / "reporter" / "cuda" / "build.py"
    assert Path(got["embedded_file"]).parts[-3:] == ("reporter", "cuda", "build.py")
    assert not Path(got["embedded_file"]).is_relative_to(ROOT)


@pytest.mark.skipif(not HAVE_TRITON, reason="triton is not installed here: the flashattn modules import it "
                                            "(the loader is still checked below with a stand-in)")
def test_flashattn_export_imports_with_triton(exported):
    path, _ = exported[("flashattn", "v05")]
    got = clean_python("""
        import submission
        v05, v04 = sys.modules["v05_tma"], sys.modules["v04_exp2"]
        print(json.dumps(dict(callable=callable(submission.custom_kernel), sibling=v05.v04_exp2 is v04,
                              v04_file=v04.__file__, v05_file=v05.__file__)))
    """, cwd=path.parent)
    assert got["callable"] and got["sibling"]
    assert Path(got["v04_file"]).parent == Path(got["v05_file"]).parent


TRITON_STAND_IN = {
    "triton/__init__.py": "def jit(fn=None, **kw):\n    return fn if fn is not None else (lambda f: f)\n",
    "triton/language/__init__.py": "constexpr = object\n",
    "triton/tools/__init__.py": "",
    "triton/tools/tensor_descriptor.py": "class TensorDescriptor:\n    pass\n",
}


@pytest.mark.parametrize("handle", ["v04", "v05"])
def test_flashattn_siblings_resolve_to_the_embedded_modules(exported, tmp_path, handle):
    """The loader, checked on the real flashattn files with a stand-in for triton (enough to
    import, nothing to run): v05_tma's `import v04_exp2` finds the embedded v04."""
    for rel, text in TRITON_STAND_IN.items():
        (tmp_path / "stub" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "stub" / rel).write_text(text)
    path, _ = exported[("flashattn", handle)]
    got = clean_python("""
        import submission
        out = dict(callable=callable(submission.custom_kernel), modules=sorted(
            n for n in sys.modules if n.startswith(("v0", "reporter"))))
        if "v05_tma" in sys.modules:
            v05, v04 = sys.modules["v05_tma"], sys.modules["v04_exp2"]
            out.update(sibling=v05.v04_exp2 is v04, same_folder=v04.__file__.rsplit("/", 1)[0]
                       == v05.__file__.rsplit("/", 1)[0], attention=callable(v04.attention))
        print(json.dumps(out))
    """, cwd=path.parent, extra_path=(tmp_path / "stub",))
    assert got["callable"]
    if handle == "v05":
        assert got["modules"] == ["v04_exp2", "v05_tma"]
        assert got["sibling"] and got["same_folder"] and got["attention"]
    else:
        assert got["modules"] == ["v04_exp2"]


def test_reexport_is_identical_but_for_the_date(exported, tmp_path):
    path, _ = exported[("flashattn", "v05")]
    again = tmp_path / "again.py"
    assert report("flashattn", "v05_tma", "-o", again).exit_code == 0
    old, new = path.read_text(encoding="utf-8"), again.read_text(encoding="utf-8")
    assert len(old.splitlines()) == len(new.splitlines())
    differing = [(a, b) for a, b in zip(old.splitlines(), new.splitlines(), strict=True) if a != b]
    assert all(a.startswith(EXPORTED_PREFIX) and b.startswith(EXPORTED_PREFIX) for a, b in differing)
    # onto the same file: left as it is, date included
    result = report("flashattn", "v05", "-o", again)
    assert result.exit_code == 0 and "up to date" in result.output
    assert again.read_text(encoding="utf-8") == new


def test_default_path_and_folder_output(project):
    result = report("histogram", "v05", "--format", "gpumode", root=project)
    assert result.exit_code == 0, result.output
    path = project / "exports" / "histogram" / "v05_persistent" / "submission.py"
    assert path.is_file()
    result = report("histogram", "v05", "-o", project / "hand-in", root=project)
    assert result.exit_code == 0, result.output
    def undated(text: str) -> list[str]:  # the two exports may straddle a second
        return [line for line in text.splitlines() if not line.startswith("Exported:")]

    assert undated((project / "hand-in" / "submission.py").read_text()) == undated(path.read_text())


def test_existing_different_file_needs_force(tmp_path):
    target = tmp_path / "submission.py"
    target.write_text("def custom_kernel(data):\n    return data\n")
    result = report("histogram", "v05", "-o", target)
    assert result.exit_code == 2
    assert "exists and differs" in result.output and "--force" in result.output
    assert target.read_text() == "def custom_kernel(data):\n    return data\n"
    result = report("histogram", "v05", "-o", target, "--force")
    assert result.exit_code == 0 and "overwritten" in result.output
    assert '_FILES["v05_persistent.py"]' in target.read_text() or "_FILES['v05_persistent.py']" in target.read_text()


@pytest.mark.parametrize("args,expected", [
    (["flashattn", "v99"], ["no version 'v99'", "v01_naive", "v05_tma"]),
    (["nosuch", "v01"], ["no assignment 'nosuch'", "flashattn", "histogram"]),
    (["flashattn", "v01", "--format", "pdf"], ["'pdf' is not one of", "'cs149'", "'gpumode'"]),
])
def test_unknown_names_fail_listing_the_choices(tmp_path, args, expected):
    result = report(*args, "-o", tmp_path / "s.py")
    assert result.exit_code == 2
    for text in expected:
        assert text in result.output
    assert not (tmp_path / "s.py").exists()


# --------------------------------------------------------------------------- a toy assignment


def toy_project(root: Path, files: dict[str, str]) -> Path:
    folder = root / "kernels" / "toy"
    folder.mkdir(parents=True)
    (folder / "assignment.py").write_text('TITLE = "toy"\nCASES = {"benchmark": {"seed": 1}}\n'
                                          'BENCHMARK_CASE = "benchmark"\n')
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    return root


TOY = {
    "v01_base.py": '''
        """Doubles; its CUDA source includes a header beside it."""
        from pathlib import Path
        SOURCE = Path(__file__).with_suffix(".cu")
        def scale(x):
            return 2 * x
        def custom_kernel(data):
            return scale(data)
    ''',
    "v01_base.cu": '#include "common.cuh"\nextern "C" __global__ void k() {}\n',
    "common.cuh": "#pragma once\n",
    "v02_child.py": '''
        """Imports v01 as a module and reporter.cuda, and compiles v01's source (it names it)."""
        import v01_base
        from reporter.cuda import load_module
        SOURCE = v01_base.SOURCE
        def helper(x):
            return v01_base.scale(x) + 1
        def custom_kernel(data):
            return helper(data)
    ''',
    "v03_grandchild.py": '''
        """Imports a name from v02, which imports v01."""
        from v02_child import helper
        CONFIG = dict(WIDTH=4, name="wide")
        def custom_kernel(data):
            return helper(data) * 10
    ''',
}


def test_toy_chain_loads_in_dependency_order(tmp_path):
    """v03 imports v02 imports v01 (with a .cu and the header it includes) and reporter.cuda;
    the host's own `reporter` module is given back after the import."""
    root = toy_project(tmp_path / "proj", TOY)
    out = tmp_path / "out" / "submission.py"
    result = report("toy", "v03", "-o", out, root=root)
    assert result.exit_code == 0, result.output
    text = header(out)
    assert "CONFIG:      WIDTH=4, name='wide'" in text
    assert "no timed 'benchmark' run" in text
    assert set(embedded(out)) == {"v03_grandchild.py", "v02_child.py", "v01_base.py", "v01_base.cu", "common.cuh",
                                  "reporter/__init__.py", *CUDA_PACKAGE}
    got = clean_python("""
        import types
        host = types.ModuleType("reporter")  # a harness's own module of the same name
        sys.modules["reporter"] = host
        import submission
        v01 = sys.modules["v01_base"]
        print(json.dumps(dict(result=submission.custom_kernel(3), host_kept=sys.modules["reporter"] is host,
                              cu=v01.SOURCE.read_text(), header=(v01.SOURCE.parent / "common.cuh").is_file(),
                              cuda=sys.modules["reporter.cuda"].__name__)))
    """, cwd=out.parent)
    assert got == {"result": 70, "host_kept": True, "cu": TOY["v01_base.cu"], "header": True, "cuda": "reporter.cuda"}


def test_config_is_followed_into_the_sibling_it_comes_from(tmp_path):
    same = '"""v03 under another name."""\nimport v03_grandchild as v03\nCONFIG = dict(v03.CONFIG)\n' \
           "custom_kernel = v03.custom_kernel\n"
    root = toy_project(tmp_path / "proj", {**TOY, "v04_same.py": same})
    out = tmp_path / "s.py"
    result = report("toy", "v04", "-o", out, root=root)
    assert result.exit_code == 0, result.output
    assert "CONFIG:      WIDTH=4, name='wide'" in header(out)


@pytest.mark.parametrize("files,expected", [
    ({"v01_empty.py": "X = 1\n"}, "v01_empty.py: defines no custom_kernel(data)"),
    ({"v01_records.py": "from reporter.records import Run\ndef custom_kernel(data):\n    return data\n"},
     "v01_records.py: imports reporter.records, which a submission cannot carry"),
    ({"v01_a.py": "import v02_b\ndef custom_kernel(d):\n    return d\n", "v02_b.py": "import v01_a\n"},
     "import cycle between the assignment's modules: v01_a -> v02_b -> v01_a"),
])
def test_versions_that_cannot_be_exported_name_the_file(tmp_path, files, expected):
    root = toy_project(tmp_path / "proj", files)
    result = report("toy", "v01", "-o", tmp_path / "s.py", root=root)
    assert result.exit_code == 2
    assert expected in result.output.replace("\n", "")
    assert not (tmp_path / "s.py").exists()


# --------------------------------------------------------------------------- on a GPU


def smallest_case(assignment, version=None) -> str:
    """The case with the least work (bytes to move, by the assignment's own work model), among those
    ``version`` runs (its CASES_WHERE) when given."""
    names = assignment.cases_of(version) if version is not None else list(assignment.cases())
    return min(names, key=lambda c: assignment.spec.work_model(**assignment.case(c)).bytes)


GPU_PARAMS = [pytest.param(a, v, id=f"{a.name}-{v.short}")
              for a in list_assignments(ROOT / "kernels") for v in a.versions()]


@pytest.mark.gpu
@pytest.mark.parametrize("assignment,version", GPU_PARAMS)
def test_exported_version_matches_the_reference_on_gpu(assignment, version, tmp_path):
    """Export, then run custom_kernel from the bare submission (no reporter, no kernels/) on the
    smallest case's input, and check its output against ref_kernel with the assignment's tolerance."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from reporter.compare import compare

    path = tmp_path / "bare" / "submission.py"
    result = report(assignment.name, version.name, "-o", path)
    assert result.exit_code == 0, result.output
    if assignment.task_folder is not None:  # a course problem: its harness supplies reference and task, and checks
        from reporter.harness.crosscheck import run_course_harness

        res = run_course_harness(assignment.task_folder, path.read_text(), "test", submission=f"export of {version.name}")
        assert res.returncode == 0 and res.verdict == "pass", res.output + res.stderr_tail
        return
    spec = assignment.spec
    case = smallest_case(assignment, version)
    params = assignment.case(case)
    data = spec.generate_input(**params)
    torch.save(data, tmp_path / "input.pt")
    got = clean_python(f"""
        import torch
        import submission
        data = torch.load({str(tmp_path / "input.pt")!r})
        out = submission.custom_kernel(data)
        torch.cuda.synchronize()
        torch.save(out, {str(tmp_path / "output.pt")!r})
        print(json.dumps(dict(module=type(sys.modules["{version.name}"]).__name__,
                              file=sys.modules["{version.name}"].__file__)))
    """, cwd=path.parent, timeout_s=600)
    assert not Path(got["file"]).is_relative_to(ROOT)
    out = torch.load(tmp_path / "output.pt")
    ref = spec.ref_kernel(data)
    check = compare(out, ref, spec.TOLERANCE, seed=params["seed"])
    assert check.passed, f"{version.name} exported, on {case}: {check.message}"


def test_a_project_inside_another_repository_records_no_commit_and_the_export_says_so(tmp_path):
    """A copy of the project that is not a checkout itself but sits inside another repository: its records and
    exports name no commit (the enclosing repository's HEAD is not this code's), and the export says why."""
    import subprocess

    from reporter.assignments import git_state
    from reporter.export import source_state

    outer = tmp_path / "outer"
    inner = outer / "copy_of_project"
    inner.mkdir(parents=True)
    (inner / "kernels").mkdir()
    (inner / "kernels" / "a.py").write_text("x = 1\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "outer"]):
        subprocess.run(cmd, cwd=outer, check=True, env=env, capture_output=True)
    saved = {k: os.environ.pop(k) for k in ("REPORT_GIT_COMMIT", "REPORT_GIT_DIRTY") if k in os.environ}
    try:
        commit, dirty = git_state(outer)
        assert commit and len(commit) == 40 and dirty is False  # the repository's own top: its commit
        assert git_state(inner) == (None, None)  # not the top of a checkout: no commit, not the outer one
        assert source_state(inner, []).startswith("commit unknown (the project folder is not a git checkout")
    finally:
        os.environ.update(saved)


def test_an_embedded_file_is_named_relative_to_the_project_or_the_package_never_by_a_machine_path(tmp_path):
    from reporter.export import INSTALLED, PACKAGE_DIR, _origin

    inside = PACKAGE_DIR / "cuda" / "__init__.py"
    assert _origin(inside, PACKAGE_DIR.parent) == "reporter/cuda/__init__.py"  # the project holds the package
    assert _origin(inside, tmp_path) == "reporter/cuda/__init__.py" + INSTALLED  # installed elsewhere
    stray = tmp_path / "deep" / "where" / "k.cu"
    stray.parent.mkdir(parents=True)
    stray.write_text("")
    assert _origin(stray, PACKAGE_DIR.parent) == "k.cu"  # its bare name, not /tmp/...
