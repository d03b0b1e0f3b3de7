"""`apron batch` against a hostile user and a hostile file system: two runs on one output folder, inputs
that change between runs or vanish during one, a dry run over corrupt inputs, GenConv's job files (comment
lines, 16-bit little-endian PGM, `bits 32`), the memory budget, and an output folder, batch directory,
manifest or lock file that is not what it should be.

Every case states what a user sees: the exit status, the one line that says what is wrong, and the
outputs left behind (compared with SciPy or with an undisturbed run, byte for byte).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

ndimage = pytest.importorskip("scipy.ndimage")

from conftest import RUN_TIMEOUT_S, assert_equal_images, random_image, read_pfm, read_pnm, write_pfm, write_pnm  # noqa: E402
from test_batch import (  # noqa: E402
    BACKEND,
    MANIFEST_DIR,
    MPI_SKIP,
    batch,
    dilate_ref,
    failure_lines,
    manifest_entries,
    same_bytes,
    summary,
    visible_files,
    write_images,
    write_job,
)

LOCK = f"{MANIFEST_DIR}/lock"
# ~40 ms per 256x256 image on one thread: a run of 40 images lasts long enough to be caught in the middle.
SLOW = ["--op", "gaussian:sigma=28", "--algo", "direct", "--threads", "1", "--io-threads", "1"]


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr:\n{stderr}"
    assert lines[0].startswith("apron: "), lines[0]
    return lines[0]


def start_batch(apron, args, cwd) -> subprocess.Popen:
    return subprocess.Popen([str(apron.path), "batch", *map(str, args), *BACKEND], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_until(predicate, proc: subprocess.Popen | None = None, timeout=RUN_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc is None or proc.poll() is None, f"the run ended first (exit {proc.returncode}): {proc.stderr.read()}"
        time.sleep(0.005)
    raise AssertionError("timed out")


def hold_lock(path: Path, pid_text: str):
    """Takes the output folder's lock as apron does (an OFD lock), writing `pid_text` as the holder's
    details; returns the open descriptor (the lock lasts until it is closed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    os.ftruncate(fd, 0)
    os.write(fd, pid_text.encode())
    return fd


# ---------------------------------------------------------------------------------------------------------
# two runs, one output folder
# ---------------------------------------------------------------------------------------------------------


def test_second_run_on_the_same_folder_fails_at_once_naming_the_lock_and_pid(apron, tmp_path):
    """While a slow batch writes `out`, a second batch (another pipeline) on `out` stops at once with exit 1
    and one line naming out/.apron-batch/lock and the first run's pid; it touches nothing. The first run's
    outputs are all its own; then the second job, resumed, makes every output again (none of the first
    job's is taken for its)."""
    names = [f"s{k:02d}.pgm" for k in range(40)]
    imgs = write_images(tmp_path / "imgs", names, (256, 256), seed=3000)
    batch(apron, "imgs", "-o", "ref", *SLOW, "-q", cwd=tmp_path)

    first = start_batch(apron, ["imgs", "-o", "out", *SLOW, "-q"], tmp_path)
    try:
        wait_until(lambda: f"pid {first.pid}" in ((tmp_path / "out" / LOCK).read_text()
                                                   if (tmp_path / "out" / LOCK).is_file() else ""), first)
        t0 = time.monotonic()
        r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path, expect=1)
        elapsed = time.monotonic() - t0
        line = one_line(r.stderr)
        assert line.startswith("apron: out/.apron-batch/lock: another apron batch is writing to this output "
                               f"folder (pid {first.pid} on "), line
        assert line.endswith("; wait for it to end or choose another output folder"), line
        assert elapsed < 10, f"the second run took {elapsed:.1f} s to give up"
        # --dry-run takes no lock and says who holds it
        r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--dry-run", cwd=tmp_path)
        assert f"output folder locked: out/.apron-batch/lock is held by pid {first.pid} on " in r.stdout, r.stdout
        assert first.poll() is None, "the first run must still be running (make SLOW slower)"
    finally:
        first.wait(timeout=4 * RUN_TIMEOUT_S)
    assert first.returncode == 0, first.stderr.read()
    same_bytes(tmp_path / "ref", tmp_path / "out", names)

    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (40, 0, 0), r.stderr
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / name), dilate_ref(img, 3, 3), name)


def test_kill_9_releases_the_lock_and_resume_works(apron, tmp_path):
    """kill -9 leaves the lock file (with the dead pid) but not the lock: --resume runs at once and
    finishes the job, byte for byte as an uninterrupted run."""
    names = [f"k{k:02d}.pgm" for k in range(40)]
    write_images(tmp_path / "imgs", names, (256, 256), seed=3100)
    batch(apron, "imgs", "-o", "ref", *SLOW, "-q", cwd=tmp_path)
    proc = start_batch(apron, ["imgs", "-o", "out", *SLOW, "-q"], tmp_path)
    try:
        wait_until(lambda: len(manifest_entries(tmp_path / "out")) >= 2
                   if (tmp_path / "out" / MANIFEST_DIR / "manifest-0.tsv").is_file() else False, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert f"pid {proc.pid}" in (tmp_path / "out" / LOCK).read_text()
    r = batch(apron, "imgs", "-o", "out", *SLOW, "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert s["skipped"] >= 2 and s["done"] + s["skipped"] == 40 and s["failed"] == 0, r.stderr
    same_bytes(tmp_path / "ref", tmp_path / "out", names)
    assert (tmp_path / "out" / LOCK).read_text() == "", "a finished run leaves no holder in the lock file"


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_mpi_on_a_locked_folder_stops_every_rank_with_one_line(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (20, 24), seed=3200)
    fd = hold_lock(tmp_path / "out" / LOCK, "pid 4242\nhost elsewhere\nstarted earlier\n")
    try:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "--oversubscribe", "-np", "3", str(apron.path), "batch", "imgs", "-o", "out",
               "--op", "dilate", *BACKEND]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=4 * RUN_TIMEOUT_S)
    finally:
        os.close(fd)
    assert r.returncode != 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("apron")]
    assert lines == ["apron: out/.apron-batch/lock: another apron batch is writing to this output folder "
                     "(pid 4242 on elsewhere, started earlier); wait for it to end or choose another output "
                     "folder"], r.stderr
    assert "MPI_ABORT" not in r.stderr, "a refused lock ends the ranks cleanly, not by MPI_Abort"
    assert visible_files(tmp_path / "out") == []
    assert not list((tmp_path / "out" / MANIFEST_DIR).glob("manifest-*.tsv")), "no rank may touch a manifest"


def test_lock_file_left_by_a_dead_process_blocks_nothing(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (20, 24), seed=3300)
    (tmp_path / "out" / MANIFEST_DIR).mkdir(parents=True)
    (tmp_path / "out" / LOCK).write_text("pid 999999\nhost gone\nstarted 1999-12-31 23:59:59 UTC\n")
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / name), dilate_ref(img, 3, 3), name)


# ---------------------------------------------------------------------------------------------------------
# resume checks the input each output was made from
# ---------------------------------------------------------------------------------------------------------


def test_changed_input_then_resume_redoes_exactly_that_output(apron, tmp_path):
    """One input replaced by other pixels of the same size with an OLDER modification time (and another
    touched without changing): --resume makes exactly the changed one again, from its new pixels."""
    names = [f"c{k}.pgm" for k in range(6)]
    imgs = write_images(tmp_path / "imgs", names, (30, 41), seed=3400)
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)
    before = {n: (tmp_path / "out" / n).read_bytes() for n in names}

    changed = tmp_path / "imgs" / "c3.pgm"
    st = changed.stat()
    new = random_image((30, 41), np.uint8, seed=3499)
    write_pnm(changed, new)
    assert changed.stat().st_size == st.st_size
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns - 3_600_000_000_000))  # an hour older
    os.utime(tmp_path / "imgs" / "c1.pgm")  # newer time, same bytes: still done

    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (1, 5, 0), r.stderr
    assert_equal_images(read_pnm(tmp_path / "out" / "c3.pgm"), dilate_ref(new, 3, 3), "c3.pgm")
    for n in names:
        if n != "c3.pgm":
            assert (tmp_path / "out" / n).read_bytes() == before[n], n
    # the manifest now describes the new input
    entries = {e[0]: e for e in manifest_entries(tmp_path / "out")}
    assert sorted(entries) == names
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    assert summary(r.stderr)["skipped"] == 6, r.stderr


def test_input_changed_with_the_same_modification_time_is_redone(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (16, 16), seed=3450)
    batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", cwd=tmp_path)
    a = tmp_path / "imgs" / "a.pgm"
    st = a.stat()
    data = bytearray(a.read_bytes())
    data[-1] ^= 0x5A  # one pixel
    a.write_bytes(bytes(data))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", "--resume", cwd=tmp_path)
    assert (summary(r.stderr)["done"], summary(r.stderr)["skipped"]) == (1, 1), r.stderr
    want = ndimage.grey_erosion(read_pnm(a), size=(3, 3), mode="nearest")
    assert_equal_images(read_pnm(tmp_path / "out" / "a.pgm"), want, "a.pgm")


def test_manifest_lines_of_another_job_are_not_taken(apron, tmp_path):
    """A manifest line forged for this output with another job's id (or an old-format line under this
    job's header) is not taken: the output is made again."""
    imgs = write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=3500)
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)
    manifest = tmp_path / "out" / MANIFEST_DIR / "manifest-0.tsv"
    text = manifest.read_text()
    header, line = text.splitlines()[:2], text.splitlines()[2]
    fields = line.split("\t")
    forged = "\t".join(fields[:-1] + ["0123456789abcdef"])
    (tmp_path / "out" / "a.pgm").write_bytes(b"P5\n1 1\n255\n\x07")  # what the forged line should protect
    data = (tmp_path / "out" / "a.pgm").read_bytes()
    import zlib
    fields[1], fields[2] = str(len(data)), f"{zlib.crc32(data):08x}"
    manifest.write_text("\n".join(header + ["\t".join(fields[:-1] + ["0123456789abcdef"]), forged]) + "\n")
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    assert (summary(r.stderr)["done"], summary(r.stderr)["skipped"]) == (1, 0), r.stderr
    assert_equal_images(read_pnm(tmp_path / "out" / "a.pgm"), dilate_ref(imgs["a.pgm"], 3, 3), "a.pgm")


def test_old_version_manifest_is_not_trusted_and_a_note_says_so(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (20, 24), seed=3550)
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)
    manifest = tmp_path / "out" / MANIFEST_DIR / "manifest-0.tsv"
    old = ["# apron batch manifest 1", "# job whatever"]
    for name in imgs:
        data = (tmp_path / "out" / name).read_bytes()
        import zlib
        old.append(f"{name}\t{len(data)}\t{zlib.crc32(data):08x}\timgs/{name}")
    manifest.write_text("\n".join(old) + "\n")
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    assert ("apron: note: out/.apron-batch/manifest-0.tsv: written in manifest version '1' (an older apron's), "
            "not trusted: its outputs are made again") in r.stderr.splitlines(), r.stderr
    assert (summary(r.stderr)["done"], summary(r.stderr)["skipped"]) == (2, 0), r.stderr


# ---------------------------------------------------------------------------------------------------------
# --dry-run
# ---------------------------------------------------------------------------------------------------------


def test_dry_run_with_a_corrupt_first_input_plans_from_the_next_and_exits_as_a_real_run(apron, tmp_path):
    names = ["a_bad.pgm", "b.pgm", "c_bad.png", "d.pgm"]
    write_images(tmp_path / "imgs", ["b.pgm", "d.pgm"], (30, 40), seed=3600)
    (tmp_path / "imgs" / "a_bad.pgm").write_bytes(b"P5\n40 30\n255\n")  # header, no pixels
    (tmp_path / "imgs" / "c_bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    r = batch(apron, "imgs", "-o", "out", "--op", "gaussian:sigma=2", "--dry-run", cwd=tmp_path, expect=5)
    out = r.stdout
    assert out.startswith("4 images"), out
    assert "plan for imgs/b.pgm (40x30):" in out, out
    assert "2 of 4 inputs unreadable (a real run reports each and exits 5):" in out, out
    listed = [line.strip() for line in out.splitlines() if line.startswith("  imgs/") and "->" not in line]
    assert len(listed) == 2 and listed[0].startswith("imgs/a_bad.pgm: ") and listed[1].startswith("imgs/c_bad.png: "), out
    assert not (tmp_path / "out").exists(), "--dry-run wrote something"

    real = batch(apron, "imgs", "-o", "out", "--op", "gaussian:sigma=2", cwd=tmp_path, expect=5)
    assert [f.removeprefix("apron: failed: ") for f in failure_lines(real.stderr)] == listed, real.stderr
    assert visible_files(tmp_path / "out") == ["b.pgm", "d.pgm"]

    # every input unreadable: no plan, still the real run's status
    for n in ("b.pgm", "d.pgm"):
        (tmp_path / "imgs" / n).write_bytes(b"garbage")
    r = batch(apron, "imgs", "-o", "out2", "--op", "gaussian:sigma=2", "--dry-run", cwd=tmp_path, expect=5)
    assert "no plan: no input is readable" in r.stdout and "4 of 4 inputs unreadable" in r.stdout, r.stdout
    # and all readable: 0
    write_images(tmp_path / "ok", ["x.pgm"], (5, 7), seed=3601)
    batch(apron, "ok", "-o", "out3", "--op", "gaussian:sigma=2", "--dry-run", cwd=tmp_path, expect=0)


def test_dry_run_reports_what_the_job_file_and_the_memory_budget_refuse(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm", "big.pgm"], lambda k: (20, 24) if k == 0 else (20, 99), seed=3650)
    write_job(tmp_path / "job.txt", ["imgs/a.pgm", "imgs/big.pgm"], bits=8, max_size=(64, 48))
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate", "--dry-run", cwd=tmp_path, expect=5)
    assert "imgs/big.pgm: is 99x20, larger than the job file's maximum 64x48" in r.stdout, r.stdout
    # Larger than the budget: streamed in bands where a band fits, refused naming the input where none does.
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--dry-run", "--memory", "2K", cwd=tmp_path, expect=5)
    assert "1 of 2 inputs larger than the memory budget, streamed in bands after the others:\n  imgs/a.pgm\n" in r.stdout, r.stdout
    assert "  imgs/big.pgm: --memory: a band of " in r.stdout and "over the memory budget of" in r.stdout, r.stdout
    assert "memory budget: 2.00 KiB" in r.stdout, r.stdout
    real = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--memory", "2K", cwd=tmp_path, expect=5)
    assert [f.removeprefix("apron: failed: ") for f in failure_lines(real.stderr)] == [
        line.strip() for line in r.stdout.splitlines() if line.startswith("  imgs/big.pgm: ")], real.stderr
    assert visible_files(tmp_path / "out") == ["a.pgm"]


# ---------------------------------------------------------------------------------------------------------
# GenConv job files
# ---------------------------------------------------------------------------------------------------------


def test_job_file_with_a_leading_comment(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (30, 40), seed=3700)
    (tmp_path / "job.txt").write_text("# GenConv job: two scans\n2\n# bits per sample\n8\n40 30\n1 1\n"
                                      "imgs/a.pgm\n# the second\nimgs/b.pgm\n")
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)
    assert summary(r.stderr)["done"] == 2, r.stderr
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / name), dilate_ref(img, 3, 3)[1:-1, 1:-1], name)


def test_job_bits_32_is_refused_up_front_or_read_as_float_when_told(apron, tmp_path):
    img = random_image((12, 17), np.float32, seed=3750)
    (tmp_path / "imgs").mkdir()
    write_pfm(tmp_path / "imgs" / "f.pfm", img)
    write_job(tmp_path / "job.txt", ["imgs/f.pfm"], bits=32, max_size=(17, 12))
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path, expect=1)
    assert one_line(r.stderr) == (
        "apron: job.txt:2: bits per sample 32: a GenConv job's 32-bit samples are int32, which apron does not "
        "read (it reads 8- and 16-bit integer and 32-bit float images); convert the images to 16-bit, or to "
        "32-bit float (PFM, TIFF) and pass --job-bits32 float")
    assert not (tmp_path / "out").exists()
    batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "--job-bits32", "float", cwd=tmp_path)
    got = read_pfm(tmp_path / "out" / "f.pfm")
    assert np.array_equal(got, ndimage.grey_dilation(img, size=(3, 3), mode="nearest"))
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate", "--job-bits32", "int64", cwd=tmp_path, expect=1)
    assert "--job-bits32" in one_line(r.stderr)


def test_genconv_little_endian_16_bit_pgm(apron, tmp_path):
    """GenConv writes 16-bit PGM little-endian. With --byte-order little apron reads the values GenConv
    wrote; the default (Netpbm's big-endian) reads them byte-swapped, and the two runs are two jobs for
    --resume."""
    img = random_image((23, 31), np.uint16, seed=3800)
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "le.pgm").write_bytes(b"P5\n31 23\n65535\n" + img.astype("<u2").tobytes())
    write_job(tmp_path / "job.txt", ["imgs/le.pgm"], bits=16, max_size=(31, 23))
    batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "--byte-order", "little", cwd=tmp_path)
    assert_equal_images(read_pnm(tmp_path / "out" / "le.pgm"), dilate_ref(img, 3, 3), "little-endian read")

    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    assert summary(r.stderr)["skipped"] == 0, "the byte order is part of the job: nothing may be skipped"
    swapped = img.byteswap()
    assert_equal_images(read_pnm(tmp_path / "out" / "le.pgm"), dilate_ref(swapped, 3, 3), "big-endian read")

    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate", "--byte-order", "middle", cwd=tmp_path, expect=1)
    assert "--byte-order" in one_line(r.stderr)


# ---------------------------------------------------------------------------------------------------------
# memory budget
# ---------------------------------------------------------------------------------------------------------


def test_memory_budget_bounds_images_in_flight_and_streams_one_too_large(apron, tmp_path):
    names = [f"m{k}.pgm" for k in range(8)]
    write_images(tmp_path / "imgs", names, lambda k: (40 + k, 50 + 3 * k), seed=3900)
    write_pnm(tmp_path / "imgs" / "z_huge.pgm", random_image((300, 400), np.uint8, seed=3901))
    batch(apron, "imgs", "-o", "ref", "--op", "dilate:se=rect:5x5", "-q", cwd=tmp_path)
    # About one small image at a time; the huge one (120 000 pixels) alone does not fit: it is streamed in
    # bands after the others, to the same bytes, and recorded for --resume as any other.
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:5x5", "--memory", "64K", cwd=tmp_path)
    assert failure_lines(r.stderr) == [], r.stderr
    assert "apron: note: imgs/z_huge.pgm: larger than the memory budget of 64.0 KiB: streamed in " in r.stderr, r.stderr
    for n in names + ["z_huge.pgm"]:
        assert (tmp_path / "out" / n).read_bytes() == (tmp_path / "ref" / n).read_bytes(), n
    again = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:5x5", "--memory", "64K", "--resume", cwd=tmp_path)
    assert summary(again.stderr)["skipped"] == len(names) + 1, again.stderr
    # A budget where not even a band fits: refused, naming the input and the option.
    r = batch(apron, "imgs", "-o", "tiny", "--op", "dilate:se=rect:5x5", "--memory", "3K", cwd=tmp_path, expect=5)
    fails = failure_lines(r.stderr)
    assert fails and all(f.startswith("apron: failed: imgs/") and "--memory" in f for f in fails), r.stderr
    for bad in ("0", "-5", "lots", "12x"):
        r = batch(apron, "imgs", "-o", "bad", "--op", "dilate", "--memory", bad, cwd=tmp_path, expect=1)
        assert "--memory" in one_line(r.stderr)
    assert not (tmp_path / "bad").exists()


# ---------------------------------------------------------------------------------------------------------
# a hostile file system
# ---------------------------------------------------------------------------------------------------------


def test_output_folder_is_a_file(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=4000)
    (tmp_path / "out").write_text("not a folder")
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", cwd=tmp_path, expect=1)
    assert one_line(r.stderr) == "apron: out: the output folder is not a directory"
    assert (tmp_path / "out").read_text() == "not a folder"
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--dry-run", cwd=tmp_path, expect=1)
    assert ("output folder unusable: out: the output folder is not a directory; a real run would stop at once"
            in r.stdout), r.stdout


def test_batch_directory_replaced_by_a_file(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=4010)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / MANIFEST_DIR).write_text("a file where the manifests go")
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--resume", cwd=tmp_path, expect=1)
    assert one_line(r.stderr) == ("apron: out/.apron-batch: is not a directory (apron batch keeps its manifests "
                                  "and lock there; move it away)")
    assert visible_files(tmp_path / "out") == []


def test_manifest_replaced_by_a_directory_or_a_link(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=4020)
    batch(apron, "imgs", "-o", "out", "--op", "dilate", cwd=tmp_path)
    manifest = tmp_path / "out" / MANIFEST_DIR / "manifest-0.tsv"
    manifest.unlink()
    manifest.mkdir()
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--resume", cwd=tmp_path, expect=1)
    assert one_line(r.stderr).startswith("apron: out/.apron-batch/manifest-0.tsv: cannot create the batch manifest"), r.stderr
    manifest.rmdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("must survive")
    manifest.symlink_to(victim)
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--resume", cwd=tmp_path, expect=1)
    assert one_line(r.stderr).startswith("apron: out/.apron-batch/manifest-0.tsv: cannot create the batch manifest"), r.stderr
    assert victim.read_text() == "must survive", "a planted link must not be followed"


def _make_unwritable(path: Path):
    """chmod for a user, the immutable attribute for root (whom permissions do not stop)."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        return lambda: path.chmod(0o755)
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
        pytest.skip("running as root without a working chattr +i: cannot make a folder unwritable")
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)


def test_output_folder_not_writable_fails_up_front(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (20, 24), seed=4030)
    # A previous run left the batch directory: the lock could be taken, the outputs could not be written.
    batch(apron, "imgs", "-o", "out", "--op", "dilate", cwd=tmp_path)
    for n in ("a.pgm", "b.pgm"):
        (tmp_path / "out" / n).unlink()
    restore = _make_unwritable(tmp_path / "out")
    try:
        r = batch(apron, "imgs", "-o", "out", "--op", "dilate", "--resume", cwd=tmp_path, expect=1)
        line = one_line(r.stderr)
        assert line.startswith("apron: out: cannot write in the output folder: "), line
    finally:
        restore()
    # a fresh folder under an unwritable parent
    (tmp_path / "ro").mkdir()
    restore = _make_unwritable(tmp_path / "ro")
    try:
        r = batch(apron, "imgs", "-o", "ro/out", "--op", "dilate", cwd=tmp_path, expect=1)
        assert one_line(r.stderr).startswith("apron: ro/out: cannot create the output directory: "), r.stderr
    finally:
        restore()


def test_inputs_that_vanish_or_change_kind_between_listing_and_reading(apron, tmp_path):
    """Inputs are checked when listed; one deleted, one replaced by a FIFO (which must not hang the run)
    and one by a directory after that fail alone, each with one line naming it; the rest is done."""
    names = [f"v{k:02d}.pgm" for k in range(40)]
    write_images(tmp_path / "imgs", names, (256, 256), seed=4040)
    (tmp_path / "list.txt").write_text("".join(f"imgs/{n}\n" for n in names))
    proc = subprocess.Popen([str(apron.path), "batch", "list.txt", "-o", "out", *SLOW, *BACKEND], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "out" / LOCK).is_file() and "pid" in (tmp_path / "out" / LOCK).read_text(), proc)
        (tmp_path / "imgs" / "v37.pgm").unlink()
        (tmp_path / "imgs" / "v38.pgm").unlink()
        os.mkfifo(tmp_path / "imgs" / "v38.pgm")
        (tmp_path / "imgs" / "v39.pgm").unlink()
        (tmp_path / "imgs" / "v39.pgm").mkdir()
        _, stderr = proc.communicate(timeout=4 * RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, stderr
    fails = failure_lines(stderr)
    assert fails == ["apron: failed: imgs/v37.pgm: cannot open: No such file or directory",
                     "apron: failed: imgs/v38.pgm: cannot read: it is a FIFO, not a regular file (apron reads only regular files)",
                     "apron: failed: imgs/v39.pgm: cannot read: it is a directory, not a regular file (apron reads only regular files)"], stderr
    assert visible_files(tmp_path / "out") == names[:37]


def test_jpeg_decoder_option_is_checked_before_anything_is_written(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=4600)
    r = batch(apron, "imgs", "-o", "out", "--op", "box", "--jpeg-decode", "fast", cwd=tmp_path, expect=1)
    assert one_line(r.stderr) == "apron: --jpeg-decode: 'fast' is not auto, cpu or gpu", r.stderr
    # nvJPEG cannot decode for the CPU backend: `gpu` insists, so it is refused; `auto` and `cpu` run.
    r = batch(apron, "imgs", "-o", "out", "--op", "box", "--jpeg-decode", "gpu", "--backend", "cpu", cwd=tmp_path,
              expect=1, backend=False)
    assert one_line(r.stderr) == "apron: --jpeg-decode: gpu: the batch runs on the CPU backend", r.stderr
    assert not (tmp_path / "out").exists()
    for choice in ("auto", "cpu"):
        batch(apron, "imgs", "-o", "out-" + choice, "--op", "box", "--jpeg-decode", choice, cwd=tmp_path)
    assert (tmp_path / "out-auto" / "a.pgm").read_bytes() == (tmp_path / "out-cpu" / "a.pgm").read_bytes()
