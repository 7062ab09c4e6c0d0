"""`report sweep` on a real GPU: configurations checked, then timed interleaved (pytest -m gpu)."""

from __future__ import annotations

import pytest

from reporter import store


def _cli(args):
    from typer.testing import CliRunner

    from reporter.cli import app

    return CliRunner().invoke(app, args)


@pytest.mark.gpu
@pytest.mark.parametrize("order", ["--interleave", "--sequential"])
def test_a_sweep_records_how_its_configurations_were_timed(tmp_path, order):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    res = _cli(["sweep", "flashattn", "v14", "-c", "test_small", "--max-reps", "6", "--budget-s", "1",
                order, "--logs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (path,) = list((tmp_path / "flashattn" / "v14_multicast" / "sweeps").glob("*.json.gz"))
    sw = store.load(path)
    assert sw.timing_order == order.removeprefix("--").replace("interleave", "interleaved")
    timed = [p for p in sw.points if p.timing is not None]
    assert len(timed) == len(sw.points) and all(p.check.passed for p in timed)
    if order == "--interleave":
        assert len({p.timing.n for p in timed}) == 1  # one call of each per round
    assert sw.chosen == sw.best().config


@pytest.mark.gpu
@pytest.mark.parametrize("ranked", [False, True])
def test_an_interleaved_run_times_versions_and_peers_together(tmp_path, ranked):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    args = ["run", "flashattn", "-v", "v13", "-v", "v14", "-c", "test_small", "--interleave", "--max-reps", "5",
            "--budget-s", "2", "--logs", str(tmp_path)] + (["--ranked"] if ranked else [])
    res = _cli(args)
    assert res.exit_code == 0, res.output
    runs = [store.load(p) for p in sorted((tmp_path / "flashattn").glob("v1[34]_*/*.json.gz"))]
    assert len(runs) == 2 and all(r.ok and r.timing.interleaved and r.timing.ranked == ranked for r in runs)
    assert runs[0].timing.n == runs[1].timing.n
    timed_peers = [p for p in runs[0].peers if p.timing is not None]
    assert timed_peers and all(p.timing.interleaved and p.timing.n == runs[0].timing.n for p in timed_peers)
    if ranked:
        assert all(len(r.ranked_checks) == r.timing.n and all(c.passed for c in r.ranked_checks) for r in runs)
    assert all(r.builds for r in runs)  # what the compiler said, as in a sequential run
