"""Long runs (issue 26, finding 15 and 21d): repeated erosions and dilations stop repeating once a pass changes
nothing (the result is the same, the steps after the fixed point are not run: --timing lists the steps run),
a whole-image run shows its progress on stderr, and the reference backend's time note follows measured rates."""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest
from scipy import ndimage

from conftest import APRON_PATH, RUN_TIMEOUT_S, random_image, read_pnm, write_pnm


def disk(r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    return x * x + y * y <= r * r


def timed_steps(stderr: str, spec: str) -> int:
    return sum(1 for line in stderr.splitlines() if f"{spec} [" in line)


@pytest.mark.parametrize("kind", ["dilate", "erode"])
def test_iterations_stop_at_the_fixed_point(apron, tmp_path, kind):
    img = random_image((30, 41), np.uint8, seed=21)
    write_pnm(tmp_path / "in.pgm", img)
    spec = f"{kind}:se=disk:3,iterations=200"
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", spec, "--timing")
    # border=ignore: enough passes spread the extremum over the whole image
    want = np.full_like(img, img.max() if kind == "dilate" else img.min())
    assert np.array_equal(read_pnm(tmp_path / "out.pgm"), want)
    assert timed_steps(r.stderr, spec) < 30, r.stderr  # the 200 passes stop soon after ~12 change anything


def test_iterations_before_the_fixed_point_are_all_run(apron, tmp_path):
    """A pass that changes something is followed by every other: the result is scipy's, pass for pass."""
    img = random_image((60, 73), np.uint8, seed=22)
    write_pnm(tmp_path / "in.pgm", img)
    spec = "dilate:se=disk:2,iterations=4,border=nearest"
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", spec, "--timing")
    want = img
    for _ in range(4):
        want = ndimage.grey_dilation(want, footprint=disk(2), mode="nearest")
    assert np.array_equal(read_pnm(tmp_path / "out.pgm"), want)
    assert timed_steps(r.stderr, spec) == 4, r.stderr


def test_a_saturating_erode_after_a_dilate(apron, tmp_path):
    """The fixed point of one operation does not leak into the next: dilate three passes, then erode until
    nothing changes (a 3x1 element: each row's minimum along the row)."""
    img = random_image((25, 31), np.uint8, seed=24)
    write_pnm(tmp_path / "in.pgm", img)
    r = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", "dilate:se=disk:2,iterations=3",
                  "--op", "erode:se=rect:3x1,iterations=100,border=nearest", "--timing")
    dilated = img
    for _ in range(3):
        dilated = ndimage.grey_dilation(dilated, footprint=disk(2), mode="constant", cval=0)
    want = np.broadcast_to(dilated.min(axis=1, keepdims=True), img.shape)
    assert np.array_equal(read_pnm(tmp_path / "out.pgm"), want)
    assert timed_steps(r.stderr, "dilate:se=disk:2,iterations=3") == 3, r.stderr
    assert timed_steps(r.stderr, "erode:se=rect:3x1,iterations=100,border=nearest") < 100, r.stderr


def test_a_whole_image_run_shows_progress(apron, tmp_path):
    write_pnm(tmp_path / "in.pgm", random_image((20, 20), np.uint8, seed=25))
    env = dict(os.environ, APRON_PROGRESS_SECONDS="0")  # progress from the first step (normally after 5 s)
    r = subprocess.run([str(APRON_PATH), "filter", str(tmp_path / "in.pgm"), str(tmp_path / "out.pgm"),
                        "--op", "box", "--op", "gaussian:sigma=1", "--stream", "off"],
                       capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("apron: step 1 of "), r.stderr
    quiet = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", "box")
    assert quiet.stderr == ""  # a run of a few milliseconds says nothing


def test_a_streamed_run_shows_progress_in_a_log(apron, tmp_path):
    write_pnm(tmp_path / "in.pgm", random_image((40, 20), np.uint8, seed=26))
    env = dict(os.environ, APRON_PROGRESS_SECONDS="0")  # in a log: a line every second from the start
    r = subprocess.run([str(APRON_PATH), "filter", str(tmp_path / "in.pgm"), str(tmp_path / "out.pgm"),
                        "--op", "box", "--stream", "on", "--band-rows", "8"],
                       capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines and all(re.fullmatch(r"apron: \d+ of 40 rows \(\d+ %\)", line) for line in lines), r.stderr
    quiet = apron.run("filter", tmp_path / "in.pgm", tmp_path / "out.pgm", "--op", "box", "--stream", "on")
    assert quiet.stderr == ""  # a log hears nothing of a run shorter than 30 s
