"""Assignment and version names are checked where the CLI reads them (reporter.assignments.check_name):
a name that is not a plain folder or file name (``../x``, ``a/../b``, ``/abs``, ``.hidden``, ``''``,
``a\\b``) is refused by every command with one line naming the argument, exit code 2, no traceback,
before anything is imported or written. CPU only, on a small tree of its own and the committed records."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.assignments import AssignmentError, check_name, get_assignment
from reporter.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

# Importing any of these files leaves a line in <tmp>/imported.txt: a refused name must import nothing.
_MARKING = '''"""A file of test_names' tree: importing it is recorded."""
from pathlib import Path

with open(Path(__file__).resolve().parents[{up}] / "imported.txt", "a") as _f:
    _f.write(__file__ + "\\n")
'''
_VERSION = _MARKING + '''

def custom_kernel(data):
    return data
'''

BAD_NAMES = ["../histogram", "good/../histogram", "/abs/path", ".hidden", "", "a\\b",
             "x\n", "[/x]"]  # one line however the name is written; a '[' is no markup
# each command's path to check_name, tried with four of them: a path out of kernels/, none (list
# took it for all), one that would print on two lines, one rich would read as markup (every name
# is tried on check_name alone below)
PER_COMMAND = ["../histogram", "", "x\n", "[/x]"]
# refused by the same rule (reporter.assignments.check_name, tested alone below)
MORE_BAD_NAMES = ["../../other/kernels/flashattn", "a/b", "..", ".", "v01 x", "v01.py", "é", "_x"]
# refused too, but a command line gives them as options unless after '--': typer's own usage error
OPTION_LIKE = ["-", "-x"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """<tmp>/proj (kernels/good, kernels/histogram, kernels/.hidden, an empty logs/) and, beside it,
    <tmp>/other/kernels/flashattn, each assignment with v01_base and v02_next; returns <tmp>/proj."""
    proj = tmp_path / "proj"
    for folder in (proj / "kernels" / "good", proj / "kernels" / "histogram", proj / "kernels" / ".hidden",
                   tmp_path / "other" / "kernels" / "flashattn"):
        folder.mkdir(parents=True)
        up = len(folder.relative_to(tmp_path).parts)  # from the file's folder to <tmp>
        (folder / "assignment.py").write_text(_MARKING.format(up=up))
        for version in ("v01_base", "v02_next"):
            (folder / f"{version}.py").write_text(_VERSION.format(up=up))
    (proj / "logs").mkdir()
    (tmp_path / "before").mkdir()  # reverify's --before-dir
    return proj


def _state(top: Path) -> dict[str, tuple[bool, int, int]]:
    """Every path under ``top``, with whether it is a folder, its size and its modification time."""
    return {str(p.relative_to(top)): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns) for p in top.rglob("*")}


def _refused(result, argument: str) -> str:
    """The one line of a refusal naming ``argument``; exit code 2, nothing on stdout, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {argument} ") and " refused: " in lines[0], lines[0]
    assert "letters, digits, '_' and '-'" in lines[0]
    return lines[0]


# Every command of `report --help` that takes an assignment or a version, NAME where the name goes (TMP: the
# folder holding the test's project); the versions are of the assignment 'good'.
ASSIGNMENT_COMMANDS = [
    "build NAME --html-only --out TMP/out",
    "export NAME v01",
    "list NAME",
    "show NAME v01",
    "history NAME v01",
    "diff NAME v01 v02",
    "same-code NAME",
    "run NAME --quick",
    "sweep NAME v01 --quick",
    "crosscheck NAME v01 --no-course",
    "reverify NAME -v v01 --before-dir TMP/before",
    "new NAME v03_more",
]
VERSION_COMMANDS = [
    "export good NAME",
    "show good NAME",
    "history good NAME",
    "diff good NAME v02",
    "diff good v01 NAME",
    "diff good v01 NAME@2026",
    "same-code good -v NAME",
    "run good --quick -v NAME",
    "sweep good NAME --quick",
    "crosscheck good NAME --no-course",
    "reverify good -v NAME --before-dir TMP/before",
    "new good NAME",
    "new good v03_more --from NAME",
]


def _invoke(command: str, name: str, root: Path):
    """``command`` with ``name`` in place of NAME (a name may hold spaces: split first) under ``--root root``."""
    args = [word.replace("NAME", name).replace("TMP", str(root.parent)) for word in command.split()]
    return runner.invoke(app, [*args, "--root", str(root)])


@pytest.mark.parametrize("name", PER_COMMAND, ids=repr)
@pytest.mark.parametrize("command", ASSIGNMENT_COMMANDS)
def test_every_command_refuses_an_assignment_that_is_no_name(tree: Path, command: str, name: str):
    before = _state(tree.parent)
    _refused(_invoke(command, name, tree), "assignment")
    assert _state(tree.parent) == before  # nothing imported (no imported.txt, no __pycache__), nothing written


@pytest.mark.parametrize("name", PER_COMMAND, ids=repr)
@pytest.mark.parametrize("command", VERSION_COMMANDS)
def test_every_command_refuses_a_version_that_is_no_name(tree: Path, command: str, name: str):
    before = _state(tree.parent)
    line = _refused(_invoke(command, name, tree), "--from: version" if "--from" in command else "version")
    shown = f"'{name}'" if name.isprintable() else repr(name)
    assert shown in line
    assert _state(tree.parent) == before


def test_build_only_refuses_a_version_that_is_no_name(tmp_path: Path):
    """--only names versions too (on the committed records: a build reads them before it looks at --only)."""
    out = tmp_path / "out"
    result = runner.invoke(app, ["build", "histogram", "--html-only", "--only", "v01,../v02", "--out", str(out),
                                 "--root", str(ROOT)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    line = result.stderr.strip()
    assert line.startswith("error: --only: version '../v02' refused: ") and "\n" not in line, result.stderr
    assert not out.exists()


def test_the_assignment_a_path_names_is_left_alone(tree: Path):
    """The case the check is for: `export ../../other/kernels/flashattn v01` imported that tree's
    assignment.py and version and wrote the export there; `good/../histogram` loaded histogram."""
    tmp = tree.parent
    for command, name in (("export NAME v01", "../../other/kernels/flashattn"),
                          ("export NAME v01", "good/../histogram"), ("export NAME v01", ".hidden"),
                          ("new NAME v03_more", "../../other/kernels/flashattn")):
        _refused(_invoke(command, name, tree), "assignment")
    assert not (tmp / "imported.txt").exists()
    assert not list(tmp.rglob("__pycache__")) and not list(tmp.rglob("submission.py"))
    assert sorted(p.name for p in (tmp / "other" / "kernels" / "flashattn").iterdir()) == \
        ["assignment.py", "v01_base.py", "v02_next.py"]


def test_a_refusal_says_what_is_allowed():
    with pytest.raises(AssignmentError) as e:
        check_name("../histogram", "assignment")
    assert str(e.value) == ("assignment '../histogram' refused: an assignment is named by its folder directly under "
                            "kernels/: letters, digits, '_' and '-', starting with a letter or digit; no '/', '\\', "
                            "'..' or leading '.'")
    with pytest.raises(AssignmentError, match=r"^version 'x\\n' refused: a version is named by its file"):
        check_name("x\n", "version")  # shown escaped: the message stays one line


@pytest.mark.parametrize("name", ["flashattn", "histogram", "my_scan", "my-scan", "Scan2", "2d_conv", "v03",
                                  "v03_tuned", "v100_big"])
def test_names_that_are_names_pass(name: str):
    assert check_name(name, "assignment") == name
    assert check_name(name, "version") == name


@pytest.mark.parametrize("name", BAD_NAMES + MORE_BAD_NAMES + OPTION_LIKE, ids=repr)
def test_names_that_are_not_names_are_refused(name: str):
    for argument in ("assignment", "version"):
        with pytest.raises(AssignmentError, match=f"^{argument} .* refused: "):
            check_name(name, argument)


# --------------------------------------------------------------------------- valid names keep working


@pytest.mark.parametrize("args", [
    ["list", "flashattn"],
    ["show", "flashattn", "v01"],
    ["show", "flashattn", "v01_naive"],
    ["history", "flashattn", "v02"],
    ["diff", "flashattn", "v01", "v02", "--no-code"],
    ["same-code", "flashattn", "--check", "-v", "v01", "-v", "v02_fused_triton"],
], ids=" ".join)
def test_valid_names_still_work(args: list[str]):
    result = runner.invoke(app, [*args, "--root", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "refused" not in result.output


def test_new_makes_the_names_the_other_commands_read(tree: Path):
    """`report new` checks the names it makes by the same rule: '-' and capitals included, as every
    command reads them; its version names are vNN_slug, the names a version's file is found by."""
    made = _invoke("new NAME v01_base", "My-Scan2", tree)
    assert made.exit_code == 0, made.output
    assert (tree / "kernels" / "My-Scan2" / "v01_base.py").is_file()
    assert _invoke("new good NAME --from v01", "v03_more", tree).exit_code == 0
    assert (tree / "kernels" / "good" / "v03_more.py").is_file()
    assert get_assignment(tree / "kernels", "My-Scan2").version("v01").name == "v01_base"
    bad = _invoke("new good NAME", "v04-dash", tree)  # a name, but no version's: refused by the scaffold's rule
    assert bad.exit_code == 2 and "must look like vNN_slug" in bad.stderr, bad.output
