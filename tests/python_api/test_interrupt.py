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


def test_sigint_raises_keyboard_interrupt_during_a_long_run():
    env = dict(os.environ, PYTHONPATH=str(Path(apron.__file__).resolve().parent.parent))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout.readline().strip() == "started", child.stderr.read()
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert out.startswith("KeyboardInterrupt after"), out + err
