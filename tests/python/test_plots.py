"""bench/plots.py: the plots of the benchmark CSVs, drawn from docs/data/*.csv (the docs' tables transcribed by
docs/data/transcribe.py), from a partial run's CSV, and refused for a CSV without the core columns.

Needs matplotlib for the plots (skipped without it), neither the apron binary nor a GPU.
"""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_csv

REPO_ROOT = Path(__file__).resolve().parents[2]
PLOTS = REPO_ROOT / "bench" / "plots.py"
DATA = REPO_ROOT / "docs" / "data"
TRANSCRIBE = DATA / "transcribe.py"

# conftest.py skips every test when the apron binary is missing, except those with this mark.
pytestmark = pytest.mark.no_apron_binary

EXPECTED = ["masks_f32.png", "masks_u8.png", "masks_f32_rank2.png", "user_cases_u8.png", "user_cases_u16.png",
            "user_cases_f32.png", "morphology.png", "host_to_host.png", "cpu_vs_opencv.png", "streaming.png"]


def run_plots(*args):
    return subprocess.run([sys.executable, str(PLOTS), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def png_size(path: Path):
    """(width, height) from the PNG header; fails on anything that is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def matplotlib():
    return pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def docs_plots(matplotlib, tmp_path_factory):
    out = tmp_path_factory.mktemp("plots")
    r = run_plots(*sorted(DATA.glob("*.csv")), "-o", out)
    assert r.returncode == 0, r.stderr
    return out, r.stdout


def test_every_plot_from_the_docs_data(docs_plots):
    out, stdout = docs_plots
    assert sorted(p.name for p in out.iterdir()) == sorted(EXPECTED)
    for name in EXPECTED:
        path = out / name
        assert "wrote " in stdout and name in stdout
        assert 10_000 < path.stat().st_size < 150_000, (name, path.stat().st_size)
        width, height = png_size(path)
        assert 850 <= width <= 900 and height >= 400, (name, width, height)


def test_docs_data_is_what_the_docs_say():
    r = subprocess.run([sys.executable, str(TRANSCRIBE), "--check"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_missing_column_fails_with_one_line_naming_the_file(tmp_path):
    good = write_csv(tmp_path / "good.csv", ["impl", "op", "type", "param", "size", "ms", "mpix_s"],
                     [["apron", "correlate", "f32", 3, 8192, 0.2, 335000]])
    bad = write_csv(tmp_path / "bad.csv", ["impl", "op", "type", "param", "size", "ms"],
                    [["apron", "correlate", "f32", 5, 8192, 0.25]])
    out = tmp_path / "out"
    r = run_plots(good, bad, "-o", out)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(bad) in lines[0] and "mpix_s" in lines[0]
    assert not out.exists() or not any(out.iterdir())


def test_a_partial_run_draws_what_it_has(matplotlib, tmp_path):
    """A bench_gpu-like CSV without provenance columns: only the masks plot, named by the options."""
    header = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "algorithm", "roofline_pct", "fma_peak"]
    rows = []
    for k, gpix in ((3, 300), (7, 180), (15, 95), (31, 29)):
        path = "fft" if k == 31 else "direct"
        rows.append(["apron", "correlate", "f32", k, 4096, "", gpix * 1e3, "linear %dx%d %s float" % (k, k, path),
                     50, 3.35e13])
        rows.append(["npp", "correlate", "f32", k, 4096, "", gpix * 1e3 / 5, "", "", ""])
    src = write_csv(tmp_path / "run.csv", header, rows)
    out = tmp_path / "out"
    r = run_plots(src, "-o", out, "--gpu", "Test GPU", "--date", "2026-01-02", "--commit", "abc1234")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["masks_f32.png"]
    assert "skipped morphology.png" in r.stdout and "skipped cpu_vs_opencv.png" in r.stdout
    png_size(out / "masks_f32.png")
