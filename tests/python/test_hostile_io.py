"""The file layer under hostile use, through the CLI: inputs that are not regular files (devices, FIFOs,
links to them), file contents that would break a one-line message, outputs that are links, FIFOs or
private files, and signals arriving while a large output is written. Every run has a timeout and, where
a runaway read is possible, an address-space limit, so that a regression fails one test, not the machine."""
import os
import resource
import signal
import stat
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import APRON_PATH, leftovers, random_image, read_pnm, write_pnm

ONE_LINE_TIMEOUT_S = 30


def limited(address_space_bytes=None, default_signals=True):
    """preexec_fn: the signals apron cleans up on at their default action (a shell may have left SIGINT
    ignored), and optionally an address-space limit."""

    def setup():
        if default_signals:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
        if address_space_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (address_space_bytes, address_space_bytes))

    return setup


def run(*args, address_space_bytes=2 << 30, timeout=ONE_LINE_TIMEOUT_S):
    return subprocess.run(
        [str(APRON_PATH), *[str(a) for a in args]],
        capture_output=True,
        timeout=timeout,
        preexec_fn=limited(address_space_bytes),
    )


def one_line(r) -> str:
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 1, f"exit {r.returncode}, stderr {err!r}"
    assert err.endswith("\n") and err.count("\n") == 1, f"not exactly one line: {err!r}"
    assert "internal error" not in err and "out of host memory" not in err, err
    return err.rstrip("\n")


def good_pgm(d: Path, name="in.pgm") -> Path:
    p = d / name
    write_pnm(p, random_image((9, 11), np.uint8, seed=120))
    return p


# ---- inputs that are not regular files ------------------------------------------------------------------

NOT_REGULAR = "not a regular file (apron reads only regular files)"


def test_dev_zero_as_input(tmp_path):
    out = tmp_path / "out.pgm"
    msg = one_line(run("filter", "/dev/zero", out, "--op", "box"))
    assert msg == f"apron: /dev/zero: cannot read: it is a character device, {NOT_REGULAR}"
    assert not out.exists()


def test_dev_zero_as_mask_file(tmp_path):
    out = tmp_path / "out.pgm"
    msg = one_line(run("filter", good_pgm(tmp_path), out, "--op", "correlate:mask=/dev/zero"))
    assert "/dev/zero: cannot read mask file: it is a character device" in msg, msg
    assert not out.exists()


def test_symlink_to_urandom_as_input(tmp_path):
    link = tmp_path / "noise.png"
    link.symlink_to("/dev/urandom")
    msg = one_line(run("filter", link, tmp_path / "out.pgm", "--op", "box"))
    assert msg == f"apron: {link}: cannot read: it links to /dev/urandom, a character device, {NOT_REGULAR}"


def test_fifo_as_input_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe.pgm"
    os.mkfifo(fifo)
    msg = one_line(run("filter", fifo, tmp_path / "out.pgm", "--op", "box", timeout=20))
    assert msg == f"apron: {fifo}: cannot read: it is a FIFO, {NOT_REGULAR}"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_directory_and_empty_file_as_input(tmp_path):
    d = tmp_path / "dir.pgm"
    d.mkdir()
    assert one_line(run("filter", d, tmp_path / "out.pgm", "--op", "box")) == (
        f"apron: {d}: cannot read: it is a directory, {NOT_REGULAR}"
    )
    empty = tmp_path / "empty.pgm"
    empty.write_bytes(b"")
    assert one_line(run("filter", empty, tmp_path / "out.pgm", "--op", "box")) == f"apron: {empty}: empty file"


def test_fifo_as_plan_input(tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    msg = one_line(run("plan", "--op", "box", "--input", fifo, timeout=20))
    assert "it is a FIFO" in msg, msg


# ---- messages stay one printable line -------------------------------------------------------------------


def test_pam_header_without_endhdr_and_with_a_nul_byte(tmp_path):
    src = tmp_path / "nul.pam"
    src.write_bytes(b"P7\nWIDTH 2\nHEIGHT 2\nDE\x00PTH 1\nMAXVAL 255\n")
    msg = one_line(run("filter", src, tmp_path / "out.pgm", "--op", "box"))
    assert msg == f"apron: {src}: malformed PNM file: unknown PAM header line 'DE\\x00PTH'"


def test_control_bytes_of_a_file_name_are_escaped(tmp_path):
    src = tmp_path / "bad\nname\x1b.pgm"
    msg = one_line(run("filter", src, tmp_path / "out.pgm", "--op", "box"))
    assert "bad\\x0aname\\x1b.pgm: cannot open" in msg, msg


# ---- outputs ---------------------------------------------------------------------------------------------


def test_private_output_stays_private(tmp_path):
    out = tmp_path / "private.pgm"
    out.write_bytes(b"old")
    out.chmod(0o600)
    r = run("filter", good_pgm(tmp_path), out, "--op", "box")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert read_pnm(out).shape == (9, 11)


def test_hard_linked_output_keeps_the_other_name(tmp_path):
    out, other = tmp_path / "out.pgm", tmp_path / "other.pgm"
    out.write_bytes(b"old")
    os.link(out, other)
    assert run("filter", good_pgm(tmp_path), out, "--op", "box").returncode == 0
    assert other.read_bytes() == b"old"
    assert read_pnm(out).shape == (9, 11)


def test_fifo_as_output_is_refused_and_left_alone(tmp_path):
    fifo = tmp_path / "out.pgm"
    os.mkfifo(fifo)
    msg = one_line(run("filter", good_pgm(tmp_path), fifo, "--op", "box", timeout=20))
    assert msg == f"apron: {fifo}: is a FIFO, not a regular file; apron writes only regular files"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert leftovers(tmp_path) == []


def test_symlinked_output_replaces_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "result.pgm"
    target.write_bytes(b"old")
    link = tmp_path / "out.pgm"
    link.symlink_to("real/result.pgm")
    assert run("filter", good_pgm(tmp_path), link, "--op", "box").returncode == 0
    assert link.is_symlink() and os.readlink(link) == "real/result.pgm"
    assert read_pnm(target).shape == (9, 11)
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "real") == []


def test_symlink_to_a_device_as_output_is_refused(tmp_path):
    link = tmp_path / "out.pgm"
    link.symlink_to("/dev/null")
    msg = one_line(run("filter", good_pgm(tmp_path), link, "--op", "box"))
    assert msg == (
        f"apron: {link}: links to /dev/null, a character device, not a regular file; apron writes only regular files"
    )
    assert link.is_symlink()


# ---- signals while a large output is written ------------------------------------------------------------

SIDE = 5000  # a 75 MB PPM out: writing and syncing it takes long enough to be caught in the act


@pytest.fixture(scope="module")
def large_input(tmp_path_factory):
    p = tmp_path_factory.mktemp("large") / "in.ppm"
    write_pnm(p, random_image((SIDE, SIDE, 3), np.uint8, seed=121))
    return p


def signal_while_writing(large_input, out: Path, sig, preexec=None) -> int:
    """Starts `apron filter` writing a large `out` and sends `sig` as soon as its temporary output file
    exists; returns the exit status (negative: killed by that signal). The whole-image writer's (--stream off:
    left to choose, apron streams a PNM this large, through a partial file of its own, which
    test_file_to_file.py interrupts)."""
    for _attempt in range(3):
        p = subprocess.Popen(
            [str(APRON_PATH), "filter", str(large_input), str(out), "--op", "box:width=1", "--stream", "off"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=preexec or limited(),
        )
        deadline = time.monotonic() + 60
        caught = False
        while p.poll() is None and time.monotonic() < deadline:
            if leftovers(out.parent):
                p.send_signal(sig)
                caught = True
                break
            time.sleep(0.001)
        p.communicate(timeout=60)
        if caught:
            return p.returncode
    pytest.fail("the temporary output file was never seen: the write is too fast to interrupt")


def complete_or_previous(out: Path) -> bool:
    data = out.read_bytes()
    return data == b"previous" or len(data) == len(f"P6\n{SIDE} {SIDE}\n255\n") + SIDE * SIDE * 3


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_signal_during_write_leaves_no_temporary_file(tmp_path, large_input, sig):
    out = tmp_path / "out.ppm"
    out.write_bytes(b"previous")
    status = signal_while_writing(large_input, out, sig)
    assert status == -sig, f"exit status {status}, expected killed by {sig.name}"
    assert leftovers(tmp_path) == [], leftovers(tmp_path)
    assert complete_or_previous(out)  # the rename may just have happened


def test_ignored_sighup_stays_ignored(tmp_path, large_input):
    """Under nohup, SIGHUP is ignored: apron must leave it so and finish its output."""
    out = tmp_path / "out.ppm"

    def nohup():
        limited()()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    status = signal_while_writing(large_input, out, signal.SIGHUP, preexec=nohup)
    assert status == 0
    assert leftovers(tmp_path) == []
    assert read_pnm(out).shape == (SIDE, SIDE, 3)


def test_control_bytes_of_a_command_line_argument_are_escaped(apron, tmp_path):
    # The command-line parser's own messages quote arguments too: one printable line whatever they hold.
    r = apron.run("filter", tmp_path / "a.pgm", tmp_path / "b.pgm", "--op", "box", "--bogus\nx\x1b[2J", check=False)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "\x1b" not in r.stderr, repr(r.stderr)
    assert "--bogus\\x0ax\\x1b[2J" in r.stderr, r.stderr
