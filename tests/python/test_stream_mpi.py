"""One image streamed by several MPI ranks (`mpirun -np N apron filter`): rank 0 hands out the bands, every
rank writes its own at their offsets of the one output file, and the file is the same bits as one process's
(the whole-image run for PNM/PFM outputs, the one-process streamed run for tiled BigTIFF). A rank killed
with SIGKILL ends the job and leaves the partial file and the ranks' journals; `--resume` with another
number of ranks finishes it, equal to an uninterrupted run. Errors end every rank with one line."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from conftest import RUN_TIMEOUT_S, mpi_env, mpi_skip_reason, random_image, write_pnm

MPI_SKIP = mpi_skip_reason()
pytestmark = pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")


def mpirun(apron, ranks, *args, check=True, cwd=None):
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), str(apron.path), "filter", *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), cwd=cwd, timeout=4 * RUN_TIMEOUT_S)
    if check:
        assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}\n{r.stdout}"
    return r


def write_pfm(path, a: np.ndarray):
    h, w = a.shape[:2]
    kind = b"PF" if a.ndim == 3 else b"Pf"
    path.write_bytes(kind + f"\n{w} {h}\n-1\n".encode() + np.ascontiguousarray(a[::-1], dtype="<f4").tobytes())


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_write_the_bits_of_one_process(apron, tmp_path, ranks):
    # u16 RGB through a wrapping blur then a reflecting disk; bands that do not divide the height.
    img = random_image((517, 301, 3), np.uint16, seed=31)
    write_pnm(tmp_path / "in.ppm", img)
    ops = ["--op", "gaussian:sigma=3,border=wrap", "--op", "dilate:se=disk:4", "--threads", "1"]
    mpirun(apron, ranks, tmp_path / "in.ppm", tmp_path / "mpi.ppm", *ops, "--band-rows", "13")
    apron.run("filter", tmp_path / "in.ppm", tmp_path / "whole.ppm", *ops, "--stream", "off")
    assert (tmp_path / "mpi.ppm").read_bytes() == (tmp_path / "whole.ppm").read_bytes()
    # Tiled BigTIFF (tiles of 16 rows; bands of whole rows of tiles), the one-process streamed file.
    mpirun(apron, ranks, tmp_path / "in.ppm", tmp_path / "mpi.tif", *ops, "--band-rows", "20", "--tile", "16")
    apron.run("filter", tmp_path / "in.ppm", tmp_path / "one.tif", *ops, "--stream", "on", "--band-rows", "20", "--tile", "16")
    assert (tmp_path / "mpi.tif").read_bytes() == (tmp_path / "one.tif").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.ppm", "mpi.ppm", "mpi.tif", "one.tif", "whole.ppm"]


def test_float_gray_and_one_band_per_rank(apron, tmp_path):
    img = random_image((40, 77), np.float32, seed=32)
    write_pfm(tmp_path / "in.pfm", img)
    (tmp_path / "m.txt").write_text("3 2\n0.5 -1 2\n1 0.25 -3\n")
    ops = ["--op", f"correlate:mask={tmp_path / 'm.txt'}", "--algo", "direct"]
    # 4 ranks, 3 bands: a rank with no band still takes part.
    mpirun(apron, 4, tmp_path / "in.pfm", tmp_path / "mpi.pfm", *ops, "--band-rows", "16")
    apron.run("filter", tmp_path / "in.pfm", tmp_path / "whole.pfm", *ops, "--stream", "off")
    assert (tmp_path / "mpi.pfm").read_bytes() == (tmp_path / "whole.pfm").read_bytes()


def journal_bands(tmp_path, name):
    total = 0
    for path in glob.glob(str(tmp_path / f".{name}.apron-journal*")):
        try:
            total += open(path).read().count("band ")
        except OSError:
            pass
    return total


def test_a_killed_rank_then_resume_with_other_ranks_matches_an_uninterrupted_run(apron, tmp_path):
    img = random_image((1500, 1200), np.uint16, seed=33)
    write_pnm(tmp_path / "in.pgm", img)
    ops = ["--op", "gaussian:sigma=8", "--op", "dilate:se=disk:6", "--algo", "direct", "--band-rows", "2", "--threads", "1"]
    cmd = ["mpirun", "--oversubscribe", "-np", "3", str(apron.path), "filter", str(tmp_path / "in.pgm"),
           str(tmp_path / "out.pgm"), *ops]
    p = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and journal_bands(tmp_path, "out.pgm") < 10:
        time.sleep(0.005)
    killed = p.poll() is None
    if killed:  # SIGKILL one rank: mpirun then ends the others
        ranks = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        assert ranks, "no rank of mpirun found"
        os.kill(int(ranks[0]), signal.SIGKILL)
    assert p.wait(timeout=4 * RUN_TIMEOUT_S) != 0 or not killed
    if killed:
        assert (tmp_path / ".out.pgm.apron-partial").exists() and not (tmp_path / "out.pgm").exists()
        finished = journal_bands(tmp_path, "out.pgm")
        assert 10 <= finished < 750
    r = mpirun(apron, 2, tmp_path / "in.pgm", tmp_path / "out.pgm", *ops, "--resume", "--timing")
    if killed:
        resumed = int(r.stderr.split(" resumed")[0].rsplit(" ", 1)[-1].lstrip("("))
        assert resumed >= finished - 3, r.stderr  # a band the killed rank wrote but did not record is redone
    apron.run("filter", tmp_path / "in.pgm", tmp_path / "whole.pgm", *ops[:-4], "--stream", "off")
    assert (tmp_path / "out.pgm").read_bytes() == (tmp_path / "whole.pgm").read_bytes()
    assert not glob.glob(str(tmp_path / ".out.pgm.apron-*"))


@pytest.mark.parametrize("args, message", [
    (["missing.pgm", "o.pgm", "--op", "box:width=3"], "missing.pgm"),
    (["in.pgm", "o.png", "--op", "box:width=3"], "o.png"),
    (["in.pgm", "o.pgm", "--op", "box:width=3", "--stream", "off"], "--stream off"),
    (["in.pgm", "o.pgm", "--op", "box:width=0"], "box"),
])
def test_errors_end_every_rank_in_one_line(apron, tmp_path, args, message):
    write_pnm(tmp_path / "in.pgm", random_image((30, 20), np.uint8, seed=34))
    r = mpirun(apron, 3, *args, check=False, cwd=tmp_path)
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.startswith("apron:")]
    assert errors and all(message in line for line in errors), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.pgm"]


def rank_0_bands(tmp_path, name):
    try:
        return open(tmp_path / f".{name}.apron-journal").read().count("band ")
    except OSError:
        return 0


def killed_mpi_run(apron, tmp_path, ranks, ops, bands, count=journal_bands):
    """Starts `ranks` ranks on in.pgm -> out.pgm, SIGKILLs one once the journals hold `bands` bands (as `count`
    counts them); False when the run ended first."""
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), str(apron.path), "filter", str(tmp_path / "in.pgm"),
           str(tmp_path / "out.pgm"), *ops]
    p = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and count(tmp_path, "out.pgm") < bands:
        time.sleep(0.005)
    killed = p.poll() is None
    if killed:
        ranks_of = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        assert ranks_of, "no rank of mpirun found"
        os.kill(int(ranks_of[0]), signal.SIGKILL)
    p.wait(timeout=4 * RUN_TIMEOUT_S)
    return killed


def test_stale_rank_journals_of_a_killed_run_never_mix_into_a_later_one(apron, tmp_path):
    """A killed 3-rank run leaves .o.pgm.apron-journal.1 and .2; a fresh run killed later, then resumed, must
    not take their bands (its partial file started empty)."""
    write_pnm(tmp_path / "in.pgm", random_image((1500, 1200), np.uint16, seed=35))
    ops = ["--op", "gaussian:sigma=8", "--op", "dilate:se=disk:6", "--algo", "direct", "--band-rows", "2", "--threads", "1"]
    if not killed_mpi_run(apron, tmp_path, 3, ops, 60):
        pytest.skip("the run finished before it could be killed")
    for name in glob.glob(str(tmp_path / ".out.pgm.apron-journal")):
        os.remove(name)  # (so that the kill below waits for the fresh run's own bands)
    assert glob.glob(str(tmp_path / ".out.pgm.apron-journal.*"))  # the stale ranks' journals
    if not killed_mpi_run(apron, tmp_path, 2, ops, 4, count=rank_0_bands):
        pytest.skip("the run finished before it could be killed")
    mpirun(apron, 2, tmp_path / "in.pgm", tmp_path / "out.pgm", *ops, "--resume")
    apron.run("filter", tmp_path / "in.pgm", tmp_path / "whole.pgm", *ops[:-4], "--stream", "off")
    assert (tmp_path / "out.pgm").read_bytes() == (tmp_path / "whole.pgm").read_bytes()
    assert not glob.glob(str(tmp_path / ".out.pgm.apron-*"))
