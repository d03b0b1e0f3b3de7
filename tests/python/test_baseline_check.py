"""bench/baseline_check.py: a run's rows against a baseline of the same GPU, regressions named and failing."""
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, write_csv

pytestmark = pytest.mark.no_apron_binary
SCRIPT = REPO_ROOT / "bench" / "baseline_check.py"
HEADER = ["impl", "op", "type", "param", "size", "ms", "mpix_s", "channels", "shape"]
BASE = [["apron", "correlate", "u8", "3", "8192", "0.1", "1000", "1", "3x3"],
        ["apron", "correlate", "u8", "3", "8192", "0.3", "300", "3", "3x3"],
        ["apron", "dilate", "f32", "9", "8192", "1", "100", "1", "disk:4"]]


def check(tmp_path, rows, *args):
    run = write_csv(tmp_path / "run.csv", HEADER, rows)
    base = write_csv(tmp_path / "base.csv", HEADER, BASE)
    return subprocess.run([sys.executable, SCRIPT, run, base, *args], capture_output=True, text=True, timeout=60)


def test_equal_runs_pass(tmp_path):
    r = check(tmp_path, BASE)
    assert r.returncode == 0 and "3 rows matched, 0 more than 10% slower" in r.stdout


def test_a_row_more_than_ten_percent_slower_fails_and_is_named(tmp_path):
    rows = [list(x) for x in BASE]
    rows[1][6] = "269"  # 0.897x the baseline's 300
    rows[2][6] = "91"   # 0.91x: within 10 %
    r = check(tmp_path, rows)
    assert r.returncode == 1
    assert "slower: correlate u8 3x3 8192^2 c3: 269 Mpix/s against 300 (0.90x)" in r.stdout
    assert "dilate" not in r.stdout.split("slower than the baseline")[1]


def test_missing_rows_are_listed(tmp_path):
    r = check(tmp_path, BASE[:2], "--markdown")
    assert r.returncode == 0
    assert "1 rows only in the baseline: dilate f32 disk:4 8192^2 c1" in r.stdout
    assert "| correlate u8 3x3 8192^2 c1 | 1000 | 1000 | 1.00 |" in r.stdout


def test_rows_far_from_the_planners_prediction_are_listed(tmp_path):
    header = HEADER + ["predicted_ms"]
    rows = [BASE[0] + ["0.079"],   # 1.27x the prediction: listed
            BASE[1] + ["0.25"],    # 1.2x: within 25 %
            BASE[2] + [""]]        # no prediction (morphology)
    run = write_csv(tmp_path / "run.csv", header, rows)
    base = write_csv(tmp_path / "base.csv", HEADER, BASE)
    r = subprocess.run([sys.executable, SCRIPT, run, base], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 rows more than 25% off the planner's prediction" in r.stdout
    assert "mispredicted: correlate u8 3x3 8192^2 c1: 0.100 ms measured, 0.079 ms predicted (1.27x)" in r.stdout
