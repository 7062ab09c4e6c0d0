"""Whether a figure still describes the code (reporter.samecode): the one answer, the proof that a
rewrite compiles to the same kernels and the same Python, and what the report and the export say."""

from __future__ import annotations

import hashlib
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import LOGS, ROOT
from reporter import store
from reporter.assignments import get_assignment
from reporter.cli import app
from reporter.cuda import find_nvrtc_library
from reporter.records import CodeSnapshot, PtxComparison, SameCode, SourceFile
from reporter.samecode import code_status, parse_options, prove, python_tree, recorded, tree_files
from reporter.standing import standing_run

runner = CliRunner()
needs_nvrtc = pytest.mark.skipif(find_nvrtc_library() is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")


@pytest.fixture
def compiled_once(monkeypatch):
    """A proof compiles each recorded build once per kernel, and the tree's code once per recorded code
    (32 builds of 10 sources and options per `report same-code transform -v v01`): here each file with
    its options once (tests/cuda_build.py's offline_build); each side is still compiled where it lies."""
    import cuda_build

    from reporter import cuda

    monkeypatch.setattr(cuda, "nvrtc_build_offline", cuda_build.offline_build)


def _snap(**files: str) -> CodeSnapshot:
    return CodeSnapshot(files=[SourceFile(path=p, sha256=hashlib.sha256(t.encode()).hexdigest())
                               for p, t in files.items()])


def _proof(before: CodeSnapshot, after: CodeSnapshot, same: bool = True) -> SameCode:
    from reporter.records import PythonComparison

    return SameCode(run_id=f"20261126T000000000Z_{before.digest}_{after.digest}", assignment="a", version="v01_x",
                    created_utc=datetime(2026, 11, 26, tzinfo=UTC), before=before, after=after, compiler="test",
                    python=[PythonComparison(path="k/v01_x.py", before_sha256=None, after_sha256=None,
                                             same_tree=same)])


def test_code_status_current_proven_through_a_chain_or_changed():
    a, b, c = _snap(**{"k/v01_x.py": "A"}), _snap(**{"k/v01_x.py": "B"}), _snap(**{"k/v01_x.py": "C", "k/h.cuh": "h"})
    assert code_status(a, recorded(a)).state == "current"
    st = code_status(a, recorded(c), [_proof(a, b), _proof(b, c)])
    assert st.state == "proven" and st.stands and len(st.proofs) == 2
    assert st.changed == ("k/h.cuh", "k/v01_x.py")
    lost = code_status(a, recorded(c), [_proof(a, b), _proof(b, c, same=False)])  # a proof that failed is none
    assert lost.state == "changed" and not lost.stands
    assert "v01_x.py" in lost.words() and "earlier code" in lost.words()


def test_the_machine_code_decides_a_build_and_the_ptx_only_where_it_was_not_kept():
    """NVRTC's PTX of one source can differ compile to compile (numbered virtual registers) while the
    machine code stays the same: the machine code, where compared, decides; proofs made before it
    was kept stand on their PTX."""
    def build(ptx: tuple[str | None, str | None], code: tuple[str | None, str | None] = (None, None),
              recorded: str | None = None) -> PtxComparison:
        return PtxComparison(source="k.cu", kernel="k", options="-DX=1", before_ptx_sha256=ptx[0],
                             after_ptx_sha256=ptx[1], before_code_sha256=code[0], after_code_sha256=code[1],
                             recorded_code_sha256=recorded)

    assert build(("p1", "p2"), ("c", "c")).same  # the PTX's numbering moved, the machine code did not
    assert build(("p", "p"), ("c", "c")).same
    assert not build(("p", "p"), ("c1", "c2")).same  # same PTX, other machine code: not the same
    assert not build(("p", "p"), ("c", None)).same  # one side's machine code missing: not compared
    assert build(("p1", "p2"), ("c", "c"), recorded="c").same
    assert not build(("p", "p"), ("c", "c"), recorded="other").same  # the run loaded other code
    assert build(("p", "p")).same and not build(("p1", "p2")).same and not build((None, None)).same  # PTX-only proofs


def test_python_tree_ignores_docstrings_and_comments_not_code():
    one = '"""Module."""\nimport os\n\ndef f(x):\n    """Doc."""\n    return x + 1  # one\n'
    two = '"""Another text."""\nimport os\n\n\ndef f(x):\n    return x + 1\n'
    three = 'import os\n\ndef f(x):\n    return x + 2\n'
    assert python_tree(one, "a.py") == python_tree(two, "b.py") != python_tree(three, "c.py")


def test_recorded_options_are_read_back_or_refused():
    o = parse_options("--gpu-architecture=sm_90a -std=c++17 -lineinfo --ptxas-options=-v -DBLOCK_N=176 -DSTAGES=2")
    assert o is not None and o.arch == "sm_90a" and o.defines == {"BLOCK_N": "176", "STAGES": "2"}
    assert parse_options("--gpu-architecture=sm_90a -use_fast_math -DX=1") is None  # not what the harness gives
    assert parse_options("--gpu-architecture=sm_90a -DFLAG -DEMPTY=").defines == {"FLAG": None, "EMPTY": ""}


def _standing(assignment: str, version: str, root: Path = ROOT):
    a = get_assignment(root / "kernels", assignment)
    v = a.version(version)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = store.runs(root / "logs", a.name, v.name)
    return a, v, standing_run(runs, v.name, a.benchmark_case, gpu="h100")


@needs_nvrtc
def test_a_header_rewrite_is_proven_and_a_changed_kernel_is_not(project, compiled_once):
    a, v, run = _standing("transform", "v01_naive", project)
    assert run is not None and run.builds, "transform v01's figure recorded its build"
    attempt = prove([run], v, project, project / "logs")
    if code_status(run.code, tree_files(v, project)).state == "current":
        assert attempt.same  # nothing to prove: the same code compiles the same
    assert attempt.same, attempt.differences
    assert attempt.proof is not None and all(b.same for b in attempt.proof.builds) and attempt.proof.builds
    # the machine code too, kernel by kernel, from both sides
    assert all(b.before_code_sha256 and b.before_code_sha256 == b.after_code_sha256 for b in attempt.proof.builds)
    # a run that recorded the machine code it loaded holds the tree to that very code (same compiler)
    compiler = attempt.proof.compiler.split(" (")[0]
    loaded = run.model_copy(deep=True)
    for b, c in zip(loaded.builds, attempt.proof.builds, strict=True):
        b.compiler, b.code_sha256 = compiler, c.after_code_sha256
    held = prove([loaded], v, project, project / "logs")
    assert held.same and all(b.recorded_code_sha256 == b.after_code_sha256 for b in held.proof.builds)
    loaded.builds[0].code_sha256 = "0" * 64  # it ran other code than the tree's build gives
    other = prove([loaded], v, project, project / "logs")
    assert not other.same and any("machine code from the one the run recorded" in d for d in other.differences)
    loaded.builds[0].compiler = "nvrtc 12.8"  # another compiler's code cannot be held to this one's
    assert prove([loaded], v, project, project / "logs").same
    header = project / "kernels" / "transform" / "transform.cuh"
    text = header.read_text()
    bf16_only = text.replace("0x7FFFu", "0x7FFEu")  # the bf16 rounding: not in an fp32 build
    header.write_text(bf16_only, encoding="utf-8")
    assert prove([run], v, project, project / "logs").same == all("ELEM_BF16=1" not in b.options for b in run.builds)
    header.write_text(text.replace("return sinf(v);", "return sinf(v) * 0.5f;"), encoding="utf-8")
    changed = prove([run], v, project, project / "logs")
    assert not changed.same and any("different machine code" in d for d in changed.differences), changed.differences
    py = project / "kernels" / "transform" / "v01_naive.py"
    py.write_text(py.read_text() + "\nEXTRA = 1\n", encoding="utf-8")
    assert any("v01_naive.py: a different program" in d for d in prove([run], v, project, project / "logs").differences)


@needs_nvrtc
def test_same_code_command_writes_a_proof_the_report_and_export_use(project, compiled_once):
    """`report same-code` writes a proof that compares the machine code too; runs standing on proofs of
    an older session that compared PTX only are counted by `--check` and proven again by
    `--machine-code`; the report and the export then say the figure stands."""
    args = ["--root", str(project)]
    a, v, run = _standing("transform", "v01_naive", project)
    now = tree_files(v, project)
    for old in (project / "logs" / "transform" / "v01_naive" / "same_code").glob("*.json.gz"):
        old.unlink()  # start from no proof
    if code_status(run.code, now).state == "current":
        pytest.skip("transform v01's figure is on the tree's code: nothing to prove")
    check = runner.invoke(app, ["same-code", "transform", "-v", "v01", "--check", *args])
    assert check.exit_code == 1 and "not proven" in check.output, check.output
    done = runner.invoke(app, ["same-code", "transform", "-v", "v01", *args])
    assert done.exit_code == 0 and "the same" in done.output, done.output
    proofs = store.same_code(project / "logs", "transform", "v01_naive")
    assert proofs and run.run_id in proofs[-1].proven_for and proofs[-1].after.files
    folder = project / "logs" / "transform" / "v01_naive" / "same_code"
    written = {path: store.load(path) for path in folder.glob("*.json.gz")}  # one per code the runs recorded
    assert written and all(b.before_code_sha256 and b.before_code_sha256 == b.after_code_sha256
                          for proof in written.values() for b in proof.builds)
    # machine code compared: nothing stands on a PTX-only proof
    check = runner.invoke(app, ["same-code", "transform", "-v", "v01", "--check", *args])
    assert check.exit_code == 0 and "PTX only" not in check.output, check.output
    # the same proofs as an older session wrote them: no machine code compared
    for path, proof in written.items():
        old = proof.model_copy(deep=True, update={"run_id": "20261101T000000000Z_" + proof.run_id.split("Z_", 1)[1]})
        for b in old.builds:
            b.before_code_sha256 = b.after_code_sha256 = None
        path.unlink()
        store.save(old, store.same_code_path(project / "logs", old), logs=project / "logs")
    check = runner.invoke(app, ["same-code", "transform", "-v", "v01", "--check", *args])
    assert check.exit_code == 0 and "stand on proofs that compared PTX only" in " ".join(check.output.split())
    again = runner.invoke(app, ["same-code", "transform", "-v", "v01", "--machine-code", *args])
    assert again.exit_code == 0 and f"{len(written)} proof(s) written" in " ".join(again.output.split()), again.output
    check = runner.invoke(app, ["same-code", "transform", "-v", "v01", "--check", *args])
    assert "PTX only" not in check.output, check.output
    proofs = store.same_code(project / "logs", "transform", "v01_naive")
    out = project / "out"
    built = runner.invoke(app, ["build", "transform", "--html-only", "--out", str(out), *args])
    assert built.exit_code == 0, built.output
    html = (out / "worklog.html").read_text()
    # said once at the head of appendix B, each proven version with its record
    note = re.search(r'<p class="note proven">.*?</p>', html, re.S).group(0)
    assert "proven to compile to the same" in note and f'data-record="{proofs[-1].run_id}">v01_naive<' in note
    section = re.search(r'<section class="step" id="v01_naive">.*?</section>', html, re.S).group(0)
    assert "earlier code" not in section
    exported = runner.invoke(app, ["export", "transform", "v01", "-o", str(project / "sub.py"), *args])
    assert exported.exit_code == 0 and "proven to compile to the same" in exported.output, exported.output
    # a real change to what runs: the figure is then the earlier code's, and the report says so
    py = project / "kernels" / "transform" / "v01_naive.py"
    py.write_text(py.read_text() + "\nEXTRA = 1\n", encoding="utf-8")
    built = runner.invoke(app, ["build", "transform", "--html-only", "--out", str(out), *args])
    html = (out / "worklog.html").read_text()
    section = re.search(r'<section class="step" id="v01_naive">.*?</section>', html, re.S).group(0)
    assert "Measured on earlier code" in section
    how = re.search(r'id="how-v01_naive".*?</div>', html, re.S).group(0)
    assert "v01_naive.py" in how and "not re-timed" in how


def test_committed_figures_stand_or_the_report_says_they_do_not(built_reports):
    """Every version's figure in the committed reports is on the tree's code, proven to be, or marked."""
    for name in ("flashattn", "histogram", "transform"):
        a = get_assignment(ROOT / "kernels", name)
        html = built_reports[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs = store.runs(LOGS, a.name)
        proofs = store.same_code(LOGS, a.name)
        for v in a.versions():
            run = standing_run([r for r in runs if r.version == v.name], v.name, a.benchmark_case, gpu="h100")
            if run is None or not run.ok:
                continue
            st = code_status(run.code, tree_files(v, ROOT), [p for p in proofs if p.version == v.name])
            section = re.search(rf'<section class="step" id="{v.name}">.*?</section>', html, re.S).group(0)
            assert ("Measured on earlier code" in section) == (not st.stands), (name, v.name, st)


def test_a_kernels_ptx_leaves_the_other_kernels_of_its_module_out():
    from reporter.samecode import kernel_ptx

    module = """//
.version 9.0
.target sm_90a
.extern .shared .align 16 .b8 smem[];

.func  (.param .b32 func_retval0) helper(
\t.param .b32 helper_param_0
)
{
\tret;
}
\t// .globl\tother
.visible .entry other(
\t.param .u64 other_param_0
)
{
\t// begin inline asm
\t{
.reg .pred p;
}
\tret;
}
\t// .globl\tmine
.visible .entry mine(
\t.param .u64 mine_param_0
)
{
\tret;
}
"""
    mine = kernel_ptx(module, "mine")
    assert ".entry mine(" in mine and "helper(" in mine and ".extern .shared" in mine
    assert "other" not in mine and ".reg .pred p;" not in mine
    alone = module[: module.index("\t// .globl\tother")] + module[module.index("\t// .globl\tmine"):]
    assert kernel_ptx(alone, "mine") == mine  # the same kernel, whether or not the module also holds another
    with pytest.raises(KeyError):
        kernel_ptx(module, "absent")


@pytest.mark.parametrize("name", ["flashattn", "histogram", "transform"])
def test_every_committed_figure_stands_on_the_trees_code(name):
    """`report same-code NAME --check` on the committed logs: each version's standing figure on each
    case is on the tree's code or proven to compile to it (earlier runs whose code changed are
    history and only counted)."""
    r = runner.invoke(app, ["same-code", name, "--check"])
    assert r.exit_code == 0, r.output
    assert "0 of them a version's standing figure" in " ".join(r.output.split()) or "0 run(s) on code" in r.output
