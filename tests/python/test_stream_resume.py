"""Journals that cannot lie: a streamed run killed with SIGKILL, then changed behind its back (the partial file
deleted, emptied or overwritten, the input edited with its size and modification time kept, a mask file edited,
another --tile, --raw byte order or --memory, a garbled journal line, stale journals of other runs, a planted
link), then resumed: the result is always the clean run's bits, and what was set aside is said on stderr.
Also: one run at a time on an output (the lock names its holder and goes with kill -9), and a run that fails
on bad input leaves nothing behind."""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import RUN_TIMEOUT_S, random_image, write_mask, write_pnm

SLOW_OPS = ["--op", "gaussian:sigma=8", "--op", "dilate:se=disk:6", "--algo", "direct", "--threads", "1"]


def journal_of(out: Path) -> Path:
    return out.parent / f".{out.name}.apron-journal"


def partial_of(out: Path) -> Path:
    return out.parent / f".{out.name}.apron-partial"


def band_lines(out: Path) -> int:
    try:
        return sum(1 for line in journal_of(out).read_text().splitlines() if line.startswith("band "))
    except (OSError, UnicodeDecodeError):
        return 0


def filter_cmd(apron, src, out, *args):
    return [str(apron.path), "filter", str(src), str(out), *map(str, args)]


def interrupted(apron, src, out, *args, bands=8):
    """Starts a streamed run and kills it with SIGKILL once its journal records `bands` bands; returns the
    number recorded then (the run may also have finished first on a fast machine: then None)."""
    p = subprocess.Popen(filter_cmd(apron, src, out, *args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and band_lines(out) < bands:
        time.sleep(0.005)
    killed = p.poll() is None
    p.send_signal(signal.SIGKILL)
    p.wait()
    if not killed:
        return None
    assert partial_of(out).exists() and not out.exists()
    return band_lines(out)


def resumed_count(stderr: str) -> int:
    return int(stderr.split(" resumed")[0].rsplit(" ", 1)[-1].lstrip("("))


def clean(apron, src, name, *args, tmp_path):
    """The whole-image run's bytes (PNM outputs: the same file as a streamed run's)."""
    out = tmp_path / name
    apron.run("filter", src, out, *args, "--stream", "off")
    return out.read_bytes()


@pytest.fixture()
def big_pgm(tmp_path):
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((1500, 1200), np.uint16, seed=8))
    return src


def resume(apron, src, out, *args):
    return apron.run("filter", src, out, *args, "--stream", "on", "--resume", "--timing")


def no_leftovers(directory: Path):
    return sorted(p.name for p in directory.iterdir() if "apron-" in p.name) == []


@pytest.mark.parametrize("damage", ["deleted", "emptied", "zeroed"])
def test_a_damaged_partial_file_is_not_trusted(apron, tmp_path, big_pgm, damage):
    out = tmp_path / "d.pgm"
    args = [*SLOW_OPS, "--band-rows", "4"]
    if interrupted(apron, big_pgm, out, *args, "--stream", "on") is None:
        pytest.skip("the run finished before it could be killed")
    partial = partial_of(out)
    if damage == "deleted":
        partial.unlink()
    elif damage == "emptied":
        partial.write_bytes(b"")
    else:  # the same file, the same size, the first rows' bytes gone
        with open(partial, "r+b") as f:
            f.seek(20)
            f.write(b"\0" * 2400 * 8)
    r = resume(apron, big_pgm, out, *args)
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)
    if damage == "zeroed":
        assert "no longer match the partial file" in r.stderr, r.stderr
        assert resumed_count(r.stderr) > 0  # the other bands are kept
    else:
        assert ("is gone" if damage == "deleted" else "is not the one the journal vouches for") in r.stderr, r.stderr
        assert resumed_count(r.stderr) == 0
    assert no_leftovers(tmp_path)


def test_an_input_changed_with_its_size_and_time_kept_is_not_trusted(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4"]
    if interrupted(apron, big_pgm, out, *args, "--stream", "on") is None:
        pytest.skip("the run finished before it could be killed")
    st = big_pgm.stat()
    data = bytearray(big_pgm.read_bytes())
    data[30:2430] = bytes(255 - b for b in data[30:2430])  # the first row, inverted
    big_pgm.write_bytes(bytes(data))
    os.utime(big_pgm, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = resume(apron, big_pgm, out, *args)
    assert "the input changed since the journal" in r.stderr, r.stderr
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)


def test_a_mask_file_edited_between_resumes_is_noticed(apron, tmp_path, big_pgm):
    mask = tmp_path / "m.txt"
    write_mask(mask, np.arange(1, 26, dtype=float).reshape(5, 5) / 325)
    ops = ["--op", f"correlate:mask={mask}", "--op", "dilate:se=disk:9", "--algo", "direct", "--threads", "1",
           "--band-rows", "4"]
    out = tmp_path / "o.pgm"
    if interrupted(apron, big_pgm, out, *ops, "--stream", "on") is None:
        pytest.skip("the run finished before it could be killed")
    write_mask(mask, np.ones((5, 5)) / 25)  # same shape, other weights
    r = resume(apron, big_pgm, out, *ops)
    assert f"the weights and parameters of correlate:mask={mask} (step 0) differs" in r.stderr, r.stderr
    assert "starting over" in r.stderr and resumed_count(r.stderr) == 0
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *ops[:-4], tmp_path=tmp_path)


def test_another_tile_side_starts_over_and_says_so(apron, tmp_path, big_pgm, needs_tiff):
    out = tmp_path / "o.tif"
    if interrupted(apron, big_pgm, out, *SLOW_OPS, "--stream", "on", "--band-rows", "16", "--tile", "16") is None:
        pytest.skip("the run finished before it could be killed")
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "32", "--tile", "32")
    assert "--tile differs: 16 then 32; starting over" in r.stderr, r.stderr
    apron.run("filter", big_pgm, tmp_path / "one.tif", *SLOW_OPS, "--stream", "on", "--band-rows", "32", "--tile", "32")
    assert out.read_bytes() == (tmp_path / "one.tif").read_bytes()


def test_another_raw_byte_order_starts_over(apron, tmp_path):
    img = random_image((1500, 1200), np.uint16, seed=9)
    src = tmp_path / "in.raw"
    src.write_bytes(img.astype("<u2").tobytes())
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4"]
    if interrupted(apron, src, out, *args, "--raw", "1200x1500x1:u16:little") is None:
        pytest.skip("the run finished before it could be killed")
    r = resume(apron, src, out, *args, "--raw", "1200x1500x1:u16:big")
    assert "--raw differs: 1200x1500x1:u16:little then 1200x1500x1:u16:big; starting over" in r.stderr, r.stderr
    write_pnm(tmp_path / "be.pgm", img.byteswap())  # the same bytes read big-endian
    assert out.read_bytes() == clean(apron, tmp_path / "be.pgm", "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)


def test_another_memory_continues_from_the_rows_written(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    finished = interrupted(apron, big_pgm, out, *SLOW_OPS, "--stream", "on", "--band-rows", "4", "--memory", "64M",
                           bands=20)
    if finished is None:
        pytest.skip("the run finished before it could be killed")
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "8", "--memory", "96M")
    assert "--memory differs: 64.0 MiB then 96.0 MiB; continuing from the rows already written" in r.stderr, r.stderr
    assert resumed_count(r.stderr) >= (finished - 1) // 2  # bands of 8 rows the bands of 4 cover
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)


def test_a_garbled_journal_line_is_not_read_as_band_0(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4"]
    if interrupted(apron, big_pgm, out, *args, "--stream", "on") is None:
        pytest.skip("the run finished before it could be killed")
    journal = journal_of(out)
    lines = journal.read_text().splitlines(keepends=True)
    # Band 0's line garbled (as a torn write would leave it), and its rows lost in the partial file.
    lines = ["band x\n" if line.startswith("band 0 ") else line for line in lines] + ["band 4 4 in 0 zz\n"]
    journal.write_text("".join(lines))
    with open(partial_of(out), "r+b") as f:
        f.seek(20)
        f.write(b"\0" * 2400 * 4)
    r = resume(apron, big_pgm, out, *args)
    assert "2 lines of the journal do not parse; their rows are recomputed" in r.stderr, r.stderr
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)


def test_stale_rank_journals_are_removed_by_a_fresh_run_and_ignored_by_a_resume(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4", "--stream", "on"]
    if interrupted(apron, big_pgm, out, *args, bands=40) is None:
        pytest.skip("the run finished before it could be killed")
    # What a killed 3-rank run leaves: its ranks' journals (here the whole run's, as ranks 1 and 2).
    earlier = journal_of(out).read_text()
    rank1, rank2 = out.parent / ".o.pgm.apron-journal.1", out.parent / ".o.pgm.apron-journal.2"
    rank1.write_text(earlier)
    rank2.write_text(earlier)
    # A fresh run (its partial file starts empty) removes them, whatever their number.
    (out.parent / ".o.pgm.apron-journal.7").write_text(earlier)
    journal_of(out).unlink()  # (so that the kill below waits for the fresh run's own journal)
    if interrupted(apron, big_pgm, out, *args, bands=2) is None:
        pytest.skip("the run finished before it could be killed")
    assert not rank1.exists() and not rank2.exists() and not (out.parent / ".o.pgm.apron-journal.7").exists()
    # Planted again after the kill: a resume ignores journals of another run.
    rank1.write_text(earlier)
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "4")
    assert f"ignoring {rank1}: it is not a journal of the run being resumed" in r.stderr, r.stderr
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)
    assert no_leftovers(tmp_path)


def test_two_runs_on_one_output_the_second_fails_naming_the_lock_and_its_holder(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4"]
    first = subprocess.Popen(filter_cmd(apron, big_pgm, out, *args, "--stream", "on"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while time.monotonic() < deadline and first.poll() is None and band_lines(out) < 2:
            time.sleep(0.005)
        if first.poll() is not None:
            pytest.skip("the first run finished before the second started")
        for extra in (["--stream", "on"], ["--stream", "on", "--resume"], ["--stream", "off"]):
            second = apron.run("filter", big_pgm, out, *args, *extra, check=False)
            assert second.returncode == 1, second.stderr
            assert f".o.pgm.apron-lock: another apron filter is writing {out} (pid {first.pid} on " in second.stderr, second.stderr
            assert second.stderr.count("\n") == 1
        assert first.poll() is None and journal_of(out).exists()  # the loser touched nothing of the winner's
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # kill -9 released the lock: the resume runs and finishes the first run's work.
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "4")
    assert resumed_count(r.stderr) >= 2
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)
    assert no_leftovers(tmp_path)


@pytest.mark.parametrize("name", ["journal", "partial", "lock"])
@pytest.mark.parametrize("resuming", [False, True])
def test_a_planted_link_is_never_followed(apron, tmp_path, name, resuming):
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((60, 50), np.uint8, seed=3))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / f".j.pgm.apron-{name}").symlink_to(victim)
    extra = ["--resume"] if resuming else []
    r = apron.run("filter", src, tmp_path / "j.pgm", "--op", "box", "--stream", "on", "--band-rows", "8", *extra, check=False)
    assert victim.read_text() == "precious\n" and victim.stat().st_size == 9
    if r.returncode == 0:
        assert (tmp_path / "j.pgm").read_bytes() == clean(apron, src, "w.pgm", "--op", "box", tmp_path=tmp_path)
    else:  # refused in one line naming the link
        assert f".j.pgm.apron-{name}" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_hard_link_at_the_partial_name_keeps_its_other_name_s_bytes(apron, tmp_path):
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((60, 50), np.uint8, seed=3))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.link(victim, tmp_path / ".j.pgm.apron-partial")
    apron.run("filter", src, tmp_path / "j.pgm", "--op", "box", "--stream", "on")
    assert victim.read_text() == "precious\n"


def corrupt_huge_tiff(path: Path, width=60000, height=60000):
    """A little TIFF that declares a huge 8-bit image in one strip whose bytes lie past the end of the file."""
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 4096), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, width * height % 2**32 or 1),
               (284, 3, 1, 1)]
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, value in entries:
        ifd += struct.pack("<HHIHH", tag, typ, count, value, 0) if typ == 3 else struct.pack("<HHII", tag, typ, count, value)
    path.write_bytes(b"II*\0" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0) + b"\x55" * 64)


@pytest.mark.parametrize("out", ["o.pgm", "o.tif"])
def test_a_run_that_fails_on_bad_input_leaves_nothing(apron, tmp_path, out, needs_tiff):
    src = tmp_path / "bad.tif"
    corrupt_huge_tiff(src)
    r = apron.run("filter", src, tmp_path / out, "--op", "box", "--stream", "on", "--memory", "256M", check=False)
    assert r.returncode == 1 and "bad.tif" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tif"]


@pytest.fixture()
def needs_tiff(apron):
    if "tiff" not in apron.run("info").stdout.split("image formats:")[-1].split("\n")[0]:
        pytest.skip("this apron reads no TIFF (built without libtiff)")


def small_files():
    """A file-size limit of 1 MB (SIGXFSZ ignored, so that the write fails with EFBIG)."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_no_room_keeps_the_partial_output_for_resume_and_a_fresh_run_leaves_nothing(apron, tmp_path, big_pgm):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4", "--stream", "on"]
    fresh = subprocess.run(filter_cmd(apron, big_pgm, out, *args), capture_output=True, text=True, preexec_fn=small_files,
                           timeout=RUN_TIMEOUT_S)
    assert fresh.returncode == 1 and "File too large" in fresh.stderr and fresh.stderr.count("\n") == 1, fresh.stderr
    assert no_leftovers(tmp_path)  # nothing was worth keeping
    if interrupted(apron, big_pgm, out, *args) is None:
        pytest.skip("the run finished before it could be killed")
    limited = subprocess.run(filter_cmd(apron, big_pgm, out, *args, "--resume"), capture_output=True, text=True,
                             preexec_fn=small_files, timeout=RUN_TIMEOUT_S)
    assert limited.returncode == 1 and "partial output kept for --resume" in limited.stderr, limited.stderr
    assert partial_of(out).exists() and journal_of(out).exists()
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "4")
    assert resumed_count(r.stderr) > 0
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_keeps_the_partial_output_and_says_so(apron, tmp_path, big_pgm, sig):
    out = tmp_path / "o.pgm"
    args = [*SLOW_OPS, "--band-rows", "4", "--stream", "on"]
    p = subprocess.Popen(filter_cmd(apron, big_pgm, out, *args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and p.poll() is None and band_lines(out) < 4:
        time.sleep(0.005)
    if p.poll() is not None:
        pytest.skip("the run finished before it could be interrupted")
    p.send_signal(sig)
    _, err = p.communicate(timeout=RUN_TIMEOUT_S)
    assert p.returncode != 0
    assert err == f"apron: {out}: interrupted; partial output kept for --resume ({partial_of(out)})\n", err
    assert sorted(p.name for p in tmp_path.iterdir() if "apron-" in p.name) == [".o.pgm.apron-journal", ".o.pgm.apron-partial"]
    r = resume(apron, big_pgm, out, *SLOW_OPS, "--band-rows", "4")
    assert resumed_count(r.stderr) >= 4
    assert out.read_bytes() == clean(apron, big_pgm, "w.pgm", *SLOW_OPS[:-2], tmp_path=tmp_path)
