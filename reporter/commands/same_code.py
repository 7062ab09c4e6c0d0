"""`report same-code`: prove, without a GPU, that a rewrite left what a version runs unchanged.

    report same-code flashattn                 # every version whose recorded code differs from the tree's
    report same-code flashattn -v v10 -v v12   # those versions only
    report same-code transform --check         # only say where figures stand; compile nothing, write nothing
    report same-code flashattn --machine-code  # also prove again what stands on PTX-only proofs

For each version, the runs whose recorded code is neither the tree's nor proven to be
(:func:`reporter.samecode.code_status`) are grouped by their code; each group is compared with
the tree (:func:`reporter.samecode.prove`: the builds its runs recorded, their PTX and each kernel's machine
code from both sides through the offline NVRTC, each Python file's syntax tree). A proof is
written under ``logs/<assignment>/<version>/same_code/`` and names every run it covers; where the
code differs, the differences are listed and nothing is written: those runs must be timed again.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..assignments import AssignmentError, get_assignment
from ..store import RecordError
from .common import LogsOpt, RootOpt, console, err, fail, project_paths

NAME = "same-code"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/, e.g. flashattn")],
    version: Annotated[list[str] | None, typer.Option("--version", "-v", help="version(s) (name or vNN); default all")] = None,
    check: Annotated[bool, typer.Option("--check", help="only list where each version's runs stand; compile nothing, "
                                                        "write nothing; exit 1 if a standing figure's code changed "
                                                        "unproven")] = False,
    machine_code: Annotated[bool, typer.Option("--machine-code", help="also prove again the runs that stand on proofs "
                                                                      "made before the machine code was compared (PTX "
                                                                      "only), from the run's code to the tree's")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Prove that the code each run recorded compiles to what the tree holds now (PTX, machine code and Python syntax trees)."""
    from rich.progress import Progress

    from .. import store
    from ..samecode import SameCodeError, code_status, machine_code_proven, prove, tree_files
    from ..standing import standing_runs

    repo, kernels, logs_dir = project_paths(root, logs)
    try:
        a = get_assignment(kernels, assignment)
        versions = [a.version(v) for v in version] if version else a.versions()
    except (AssignmentError, RecordError) as e:
        fail(str(e))
        return
    unproven = 0
    written = 0
    ptx_only = 0  # runs that stand on a proof comparing PTX only
    unproven_figures = 0  # of the unproven runs, those that stand for a version on a case (a report's figure)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("comparing", total=len(versions))
        for v in versions:
            progress.update(task, description=v.name)
            now = tree_files(v, repo)
            proofs = store.same_code(logs_dir, a.name, v.name)
            groups: dict[str, list] = {}  # code digest -> the runs on that code
            runs_of_v = store.runs(logs_dir, a.name, v.name, legacy=a.legacy_case_keys or None)
            figures = {r.run_id for gpu in {r.device.slug for r in runs_of_v}  # what the reports print, per GPU
                       for r in standing_runs(runs_of_v, gpu=gpu).values()}
            for r in runs_of_v:
                status = code_status(r.code, now, proofs)
                if not status.stands:
                    groups.setdefault(r.code.digest, []).append(r)
                elif status.state == "proven" and not machine_code_proven(status):
                    ptx_only += 1
                    if machine_code:
                        groups.setdefault(r.code.digest, []).append(r)
            if not groups:
                progress.advance(task)
                continue
            if check:
                for code, runs in groups.items():
                    unproven += len(runs)
                    unproven_figures += sum(r.run_id in figures for r in runs)
                    console.print(f"{v.name}: {len(runs)} run(s) on code {code}, changed since and not proven the same")
                progress.advance(task)
                continue
            snapshot = v.snapshot(repo)
            for code, runs in groups.items():
                try:
                    attempt = prove(runs, v, repo, logs_dir, now_code=snapshot)
                except SameCodeError as e:
                    err.print(f"[yellow]{v.name}:[/yellow] {e}", highlight=False)
                    unproven += len(runs)
                    unproven_figures += sum(r.run_id in figures for r in runs)
                    continue
                if attempt.same and attempt.proof is not None:
                    proof = attempt.proof
                    store.save(proof, store.same_code_path(logs_dir, proof), logs=logs_dir)
                    written += 1
                    console.print(f"{v.name}: code {code} -> {proof.after.digest}: the same "
                                  f"({len(proof.builds)} build(s) compared, {len(runs)} run(s)); "
                                  f"{store.same_code_path(logs_dir, proof).relative_to(repo)}")
                else:
                    unproven += len(runs)
                    unproven_figures += sum(r.run_id in figures for r in runs)
                    console.print(f"{v.name}: code {code}: [bold]different[/bold] ({len(runs)} run(s) to time again): "
                                  + "; ".join(attempt.differences[:6])
                                  + (f" and {len(attempt.differences) - 6} more" if len(attempt.differences) > 6 else ""),
                                  highlight=False)
            progress.advance(task)
    console.print(f"{written} proof(s) written; {unproven} run(s) on code that changed unproven"
                  + ("" if not ptx_only else
                     f"; {ptx_only} run(s) that stood on PTX-only proofs compared again" if machine_code and not check else
                     f"; {ptx_only} run(s) stand on proofs that compared PTX only (--machine-code proves them again)"))
    if unproven:
        console.print(f"{unproven_figures} of them a version's standing figure on a case"
                      + ("" if unproven_figures else ": the others are earlier runs, which no report "
                                                     "prints as a version's figure"))
    if check and unproven_figures:
        raise typer.Exit(1)
