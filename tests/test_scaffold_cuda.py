"""`report new --from` never copies a CUDA source: the new version includes its parent's code, and where
the parent's own code had to move into a header for that, the parent still compiles to the same PTX.

Run on a copy of the committed kernels, the way a student starts the next version."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import app
from reporter.cuda import find_nvrtc_library, nvrtc_ptx_offline
from reporter.scaffold_cuda import split_comment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_dup import duplicated_share  # noqa: E402  (tests/cuda_dup.py)

ROOT = Path(__file__).resolve().parents[1]
needs_nvrtc = pytest.mark.skipif(find_nvrtc_library() is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")

# parents of every shape: settings and debug modes under #if (v07), multi-line function-like hooks
# (v14), a file of includes only (v19), another assignment's ring kernel (transform v11)
PARENTS = [("flashattn", "v07_pingpong"), ("flashattn", "v14_multicast"), ("flashattn", "v19_double_q"),
           ("transform", "v11_two_groups")]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scaffold")
    shutil.copytree(ROOT / "kernels", root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _ptx(path: Path) -> str:
    return re.sub(r"^//.*$", "", nvrtc_ptx_offline(path), flags=re.MULTILINE)  # the header names the file


@needs_nvrtc
@pytest.mark.parametrize("assignment,parent", PARENTS, ids=[p for _, p in PARENTS])
def test_a_new_version_includes_its_parent_and_compiles_to_the_same_code(project, assignment, parent):
    folder = project / "kernels" / assignment
    number = max(int(p.stem[1:3]) for p in folder.glob("v[0-9][0-9]_*.py")) + 1
    new = f"v{number:02d}_from_{parent.split('_')[0]}"
    before = _ptx(ROOT / "kernels" / assignment / f"{parent}.cu")
    r = CliRunner().invoke(app, ["new", assignment, new, "--from", parent, "--root", str(project)])
    assert r.exit_code == 0, r.output
    source = folder / f"{new}.cu"
    # not a copy: no run of code lines it shares with any file of the folder, the parent's included
    shared, _lines = duplicated_share(assignment, project / "kernels").by_file[source.name]
    assert shared == 0, source.read_text()
    _comment, body = split_comment(source.read_text())
    assert "EDIT ME" in _comment and "EDIT ME" in source.read_text().split("#include")[0]
    assert re.findall(r'#include "([^"]+)"', body)  # it builds on the parent's code
    # the parent compiles to what its records ran, and the new version to the same, until it changes
    assert _ptx(folder / f"{parent}.cu") == before
    assert _ptx(source) == before
    header = folder / f"{parent}.cuh"
    if header.exists():  # the parent's code moved: its .cu keeps its comment and includes the header
        assert f"{parent}.cuh" in r.output and "report same-code" in r.output
        parent_comment, parent_body = split_comment((folder / f"{parent}.cu").read_text())
        assert parent_comment == split_comment((ROOT / "kernels" / assignment / f"{parent}.cu").read_text())[0]
        assert parent_body.strip() == f'#include "{parent}.cuh"'
    # the new .py compiles the new .cu, not the parent's
    assert f"{parent}.cu" not in (folder / f"{new}.py").read_text()


def test_a_parent_of_includes_only_moves_nothing(project):
    folder = project / "kernels" / "flashattn"
    r = CliRunner().invoke(app, ["new", "flashattn", "v97_more_stores", "--from", "v19", "--root", str(project)])
    assert r.exit_code == 0, r.output
    assert not (folder / "v19_double_q.cuh").exists()
    assert (folder / "v19_double_q.cu").read_text() == (ROOT / "kernels" / "flashattn" / "v19_double_q.cu").read_text()
    assert '#include "attn_sm90_double_q.cuh"' in (folder / "v97_more_stores.cu").read_text()
