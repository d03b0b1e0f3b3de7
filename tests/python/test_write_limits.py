"""Limits and hostile outputs (issue 26, findings 7, 9, 13 and 21b): a file-size limit (ulimit -f) is a one-line
error with nothing left behind, not a silent death by SIGXFSZ; `apron calibrate -o` writes through the one
atomic writer (devices, FIFOs and directories refused, a planted NAME.partial link not followed) and within
--memory; `apron plan --size` refuses numbers that do not fit instead of wrapping them."""
from __future__ import annotations

import os
import resource
import subprocess

import numpy as np
import pytest

from conftest import RUN_TIMEOUT_S, random_image, write_pnm


def apron_leftovers(directory):
    """Temporary and partial files (a batch's .apron-batch folder of manifests is meant to stay)."""
    return sorted(p.name for p in directory.iterdir()
                  if "apron-tmp" in p.name or "apron-partial" in p.name or p.name.endswith(".partial"))


def run_with_file_limit(apron, limit, *args):
    """apron under RLIMIT_FSIZE, SIGXFSZ at its default action (what a shell's `ulimit -f` gives)."""
    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([str(apron.path), *map(str, args)], capture_output=True, text=True, preexec_fn=small_files,
                          timeout=RUN_TIMEOUT_S, restore_signals=True)


@pytest.mark.parametrize("stream", ["on", "off"])
@pytest.mark.parametrize("out", ["o.pgm", "o.png"])
def test_a_file_size_limit_is_a_one_line_error(apron, tmp_path, stream, out):
    img = random_image((300, 200), np.uint8, seed=7)
    write_pnm(tmp_path / "in.pgm", img)
    r = run_with_file_limit(apron, 20000, "filter", tmp_path / "in.pgm", tmp_path / out, "--op", "box",
                            "--stream", stream)
    assert r.returncode == 1, f"exit {r.returncode} (a negative one is the signal that ended it): {r.stderr}"
    assert out in r.stderr and "File too large" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / out).exists()
    assert apron_leftovers(tmp_path) == []


def test_a_file_size_limit_in_batch_is_reported_per_image(apron, tmp_path):
    (tmp_path / "in").mkdir()
    write_pnm(tmp_path / "in" / "a.pgm", random_image((300, 200), np.uint8, seed=8))
    r = run_with_file_limit(apron, 20000, "batch", tmp_path / "in", "-o", tmp_path / "out", "--op", "box", "-q")
    assert r.returncode == 5, f"exit {r.returncode}: {r.stderr}"
    assert "File too large" in r.stderr, r.stderr
    assert apron_leftovers(tmp_path / "out") == []


CALIBRATE = ["calibrate", "--backend", "cpu", "--size", "64x48", "--sides", "3"]


def test_calibrate_writes_its_table_atomically(apron, tmp_path):
    out = tmp_path / "table.tsv"
    apron.run(*CALIBRATE, "-o", out)
    assert out.read_text().startswith("# apron calibration table")
    assert apron_leftovers(tmp_path) == []


def test_calibrate_refuses_a_fifo_and_leaves_it(apron, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = apron.run(*CALIBRATE, "-o", fifo, check=False)
    assert r.returncode == 1 and "is a FIFO, not a regular file" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert fifo.is_fifo() and apron_leftovers(tmp_path) == []


def test_calibrate_refuses_a_device(apron, tmp_path):
    """Through a link in tmp_path, so that an apron without the check (run as root) replaces the link, never
    the device itself."""
    link = tmp_path / "null.tsv"
    link.symlink_to("/dev/null")
    r = apron.run(*CALIBRATE, "-o", link, check=False)
    assert r.returncode == 1 and "links to /dev/null, a character device" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert link.is_symlink() and not os.path.isfile("/dev/null")


def test_calibrate_does_not_follow_a_planted_partial_link(apron, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "table.tsv.partial").symlink_to(victim)
    apron.run(*CALIBRATE, "-o", tmp_path / "table.tsv")
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "table.tsv").read_text().startswith("# apron calibration table")


@pytest.mark.parametrize("size", ["65536x65536", "8192x8192"])
def test_calibrate_allocates_within_the_memory_budget(apron, size):
    r = apron.run("calibrate", "--backend", "cpu", "--size", size, "--sides", "3", "--memory", "64M", check=False)
    assert r.returncode == 1 and "over the memory budget of 64.0 MiB" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert f"calibrate --size {size}" in r.stderr


@pytest.mark.parametrize("size, message", [
    ("4294967297x4", "--size: 4294967297 is too large"),
    ("4x2147483648", "--size: 2147483648 is too large"),
    ("99999999999999999999999x1", "is too large"),
    ("-4x4", "is not WIDTHxHEIGHT"),
    ("4x4x", "is not WIDTHxHEIGHT"),
    ("0x4", "is not WIDTHxHEIGHT"),
])
def test_plan_size_does_not_wrap(apron, size, message):
    r = apron.run("plan", "--op", "box", "--size", size, check=False)
    assert r.returncode == 1 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""


def test_plan_size_at_the_limit_is_taken(apron):
    r = apron.run("plan", "--op", "box", "--size", "2147483647x1", "--type", "u8")
    assert "box" in r.stdout
