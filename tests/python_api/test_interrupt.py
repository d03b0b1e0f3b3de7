"""Ctrl-C during a long call (issue 26, finding 8): a run checks for signals between its steps, so SIGINT raises
KeyboardInterrupt within moments instead of after the whole call. The call runs in a child process, which
reports when it starts and what ended it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apron

CHILD = """
import sys, time
import numpy as np
import apron
img = np.random.default_rng(1).random((600, 600), dtype=np.float32)
p = apron.Pipeline(["gaussian:sigma=3"] * 50000)  # minutes of steps of a few milliseconds each
print("started", flush=True)
t = time.monotonic()
try:
    p.run(img, backend="cpu", threads=1)
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"KeyboardInterrupt after {time.monotonic() - t:.1f} s", flush=True)
"""


BATCH_CHILD = """
import sys, time
from pathlib import Path
import numpy as np
import apron
d = Path(sys.argv[1])
img = np.random.default_rng(2).integers(0, 256, (160, 160), dtype=np.uint8)
for k in range(200):
    (d / f"in{k:03d}.pgm").write_bytes(b"P5\\n160 160\\n255\\n" + img.tobytes())
print("started", flush=True)
t = time.monotonic()
try:
    # the reference backend: a few tenths of a second an image, a minute in all
    apron.batch(str(d / "*.pgm"), str(d / "out"), "gaussian:sigma=8", backend="reference", threads=1, io_threads=1,
                progress=False)
    print("finished", flush=True)
except KeyboardInterrupt:
    print(f"KeyboardInterrupt after {time.monotonic() - t:.1f} s", flush=True)
"""


def interrupted_child(script, *args):
    """Runs `script` in a child Python, sends SIGINT a second after it prints 'started'; its stdout and stderr."""
    env = dict(os.environ, PYTHONPATH=str(Path(apron.__file__).resolve().parent.parent))
    child = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "started", child.stderr.read()
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        return child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_sigint_raises_keyboard_interrupt_during_a_long_run():
    out, err = interrupted_child(CHILD)
    assert out.startswith("KeyboardInterrupt after"), out + err


def test_sigint_raises_keyboard_interrupt_during_a_long_batch(tmp_path):
    out, err = interrupted_child(BATCH_CHILD, tmp_path)
    assert out.startswith("KeyboardInterrupt after"), out + err
    out_dir = tmp_path / "out"
    names = [p.name for p in out_dir.iterdir()] if out_dir.exists() else []
    assert sum(n.endswith(".pgm") for n in names) < 200  # the feed stopped
    assert not any("apron-tmp" in n for n in names)  # what was written is whole (atomic writes)
