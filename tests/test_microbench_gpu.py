"""The micro-benchmarks on a GPU: the chase's latency steps up past L1 and past L2, the streaming
kernel times every launch and block, and the command writes a record the report reads."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

MiB = 1 << 20


def test_the_chase_is_slower_in_l2_than_in_l1_and_slower_again_in_dram():
    from reporter.harness import microbench as M

    l1, l2, dram = (M.measure_latency(size, seed=1) for size in (16 << 10, 8 * MiB, 256 * MiB))
    assert l1.cycles < 80 < l2.cycles < dram.cycles, (l1, l2, dram)
    assert l1.ns > 0 and l1.steps == M.CHASE_STEPS


@pytest.mark.parametrize("pattern", ["s0", "p3", "s5"])
def test_a_stream_times_every_launch_and_every_block(pattern):
    """A launch on four blocks: the bytes are the layout's, every launch has a time and every block its
    cycles (the kernel writes them; a block that never ran would leave a zero)."""
    from reporter.harness import microbench as M

    spec = M.StreamSpec("L1", 4, 1, pattern)
    buffer, sink, cycles = M.stream_buffers(4)
    cycles.zero_()
    p = M.measure_stream(spec, buffer, sink, cycles)
    lay = M.layout(spec)
    assert p.bytes == 4 * lay.passes * lay.region * 4
    assert len(p.samples_ms) == M.STREAM_REPS and min(p.samples_ms) > 0
    assert p.block_cycles > 0 and bool((cycles[:4] > 0).all())


def test_the_command_records_a_microbench_the_report_reads(tmp_path):
    from typer.testing import CliRunner

    from reporter import store
    from reporter.cli import app

    logs = tmp_path / "logs"
    res = CliRunner().invoke(app, ["device", "--microbench", "--no-profile", "--logs", str(logs)])
    assert res.exit_code == 0, res.output
    (mb,) = store.microbenches(logs)
    assert len(mb.latency) == len(__import__("reporter.harness.microbench", fromlist=["x"]).latency_sizes())
    assert mb.profile_status == "skipped" and all(s.profile is None for s in mb.streams)
    assert "L1:" in res.output and "DRAM" in res.output
