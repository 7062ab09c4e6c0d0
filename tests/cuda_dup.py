"""How much of an assignment's CUDA version code stands again elsewhere in the assignment.

The measure of issue 31's goal ("≤ 15 % of any assignment's ``.cu`` code lines duplicated elsewhere"):
a code line of a version's ``.cu`` counts as duplicated when it lies in a run of at least ``RUN``
consecutive code lines that stands, line for line, in another ``.cu`` or ``.cuh`` file of the
assignment (or elsewhere in the same file). Code lines are what ``duplicates`` reads: comments, blank
lines, lone punctuation and ``#include`` lines are passed over, and white space is folded.

Run it as ``python -m tests.cuda_dup`` for the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reporter.cudatext import code

RUN = 6
KERNELS = Path(__file__).resolve().parent.parent / "kernels"
_PUNCTUATION = re.compile(r"^[\s{}()\[\];,]*$")


def code_lines(path: Path) -> list[str]:
    """``path``'s code lines, white space folded, comments and thin lines passed over."""
    out = []
    for raw in code(path.read_text()).splitlines():
        line = " ".join(raw.split())
        if not line or _PUNCTUATION.match(line) or line.startswith("#include"):
            continue
        out.append(line)
    return out


@dataclass(frozen=True)
class Share:
    assignment: str
    lines: int
    duplicated: int
    by_file: dict[str, tuple[int, int]]

    @property
    def percent(self) -> float:
        return 100.0 * self.duplicated / self.lines if self.lines else 0.0


def duplicated_share(assignment: str, root: Path = KERNELS) -> Share:
    folder = root / assignment
    texts = {p: code_lines(p) for p in sorted([*folder.glob("*.cu"), *folder.glob("*.cuh")])}
    # every window of RUN lines -> the (file, start) places it stands at
    places: dict[tuple[str, ...], list[tuple[Path, int]]] = {}
    for path, lines in texts.items():
        for i in range(len(lines) - RUN + 1):
            places.setdefault(tuple(lines[i:i + RUN]), []).append((path, i))
    total = duplicated = 0
    by_file: dict[str, tuple[int, int]] = {}
    for path, lines in texts.items():
        if path.suffix != ".cu" or not re.match(r"v\d\d_", path.name):
            continue
        marked = [False] * len(lines)
        for i in range(len(lines) - RUN + 1):
            if len(places[tuple(lines[i:i + RUN])]) > 1:
                for j in range(i, i + RUN):
                    marked[j] = True
        by_file[path.name] = (sum(marked), len(lines))
        total += len(lines)
        duplicated += sum(marked)
    return Share(assignment, total, duplicated, by_file)


def main() -> None:
    for name in sorted(p.name for p in KERNELS.iterdir() if any(p.glob("v[0-9][0-9]_*.cu"))):
        share = duplicated_share(name)
        print(f"{name:10s} {share.duplicated:5d} / {share.lines:5d} = {share.percent:5.1f} %")
        for file, (dup, n) in share.by_file.items():
            if dup:
                print(f"    {file:28s} {dup:4d} / {n:4d}")


if __name__ == "__main__":
    main()
