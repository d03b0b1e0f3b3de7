"""`apron plan` and `apron filter --plan` name the kernel of every step (kernel=FAMILY [DETAIL]), chosen by the
planner through the backend's capabilities: CPU families on the CPU, the reference's on the reference, and the
CUDA dispatch table's in a build with CUDA (a GPU is not needed to plan)."""
import re

import numpy as np
import pytest

from conftest import random_image, write_mask, write_pnm

STEP = re.compile(r"^  step \d+: (.*)$", re.M)


def step_lines(out):
    return STEP.findall(out)


def kernels(out):
    return [re.search(r" kernel=(\S+(?: \S+=\S+)*)", line).group(1) for line in step_lines(out)]


def plan(apron, *ops, backend="cpu", size="301x199", type_="u8", extra=()):
    args = ["plan", "--size", size, "--type", type_, "--backend", backend, *extra]
    for op in ops:
        args += ["--op", op]
    return apron.run(*args).stdout


def cuda_built(apron):
    return "not built" not in apron.run("info").stdout


def cuda_device(apron):
    """A CUDA build with a device: the kernels' reach (shared memory) is the device's."""
    cuda = [line for line in apron.run("info").stdout.splitlines() if line.startswith("cuda:")]
    return bool(cuda) and "not built" not in cuda[0] and "no device" not in cuda[0]


@pytest.fixture
def mask3(tmp_path):
    return write_mask(tmp_path / "m3.kernel", np.array([[1, 2, 1], [0, 3, 0], [-1, -2, -1]]))


def test_every_step_names_its_kernel(apron, mask3):
    ops = ["gaussian:sigma=2", "dilate:se=rect:7x7", "dilate:se=rect:101x101", f"correlate:mask={mask3}",
           "open:se=ellipse:5x5", "unsharp:sigma=1.5"]
    for backend in ("cpu", "reference", "cuda"):
        for channels in ("1", "3"):
            out = plan(apron, *ops, backend=backend, extra=("--channels", channels))
            lines = step_lines(out)
            assert len(lines) >= len(ops), out
            for line in lines:
                assert " kernel=" in line, out
                assert re.search(rf" kernel={backend}[. ]", line), line


def test_cpu_kernels(apron, mask3):
    out = plan(apron, "gaussian:sigma=2", "dilate:se=rect:7x7", "dilate:se=rect:101x101", f"correlate:mask={mask3}",
               "dilate:se=ellipse:9x9")
    assert kernels(out) == ["cpu.separable lanes=q15", "cpu.morph_rect", "cpu.morph_rect", "cpu.direct", "cpu.morph_runs"], out
    ref = plan(apron, "gaussian:sigma=2", "dilate:se=rect:7x7", backend="reference")
    assert kernels(ref) == ["reference.direct", "reference.morph"], ref


def test_filter_plan_flag_prints_kernels(apron, tmp_path):
    src = tmp_path / "in.pgm"
    write_pnm(src, random_image((23, 17), np.uint8, seed=5))
    r = apron.run("filter", str(src), str(tmp_path / "out.pgm"), "--op", "dilate:se=rect:3x3", "--backend", "cpu",
                  "--plan")
    assert "kernel=cpu.morph_rect" in r.stdout, r.stdout
    assert not (tmp_path / "out.pgm").exists()


def test_cuda_plans_say_what_runs(apron, mask3):
    if not cuda_built(apron):
        out = plan(apron, "dilate:se=rect:7x7", backend="cuda")
        assert "kernel=cuda (not built)" in out, out
        return
    if not cuda_device(apron):
        pytest.skip("no CUDA device: the plan names kernels by the device's shared memory")
    out = plan(apron, "dilate:se=rect:7x7", "dilate:se=rect:101x101", "gaussian:sigma=2", f"correlate:mask={mask3}",
               backend="cuda", size="8192x8192")
    lines = step_lines(out)
    # The rectangle family takes any full rectangle: the fused tile up to 64 a side, two separable passes beyond.
    assert "separable-rect" in lines[0] and "kernel=cuda.morph_rect fast" in lines[0], out
    assert "101x101 separable-rect" in lines[1] and "kernel=cuda.morph_rect passes" in lines[1], out
    assert "kernel=cuda.separable_fused" in lines[2], out
    # An exact u8 3x3 mask with byte weights: the byte dot-product form of the direct_tiled family, or the
    # tensor cores where the cost table prefers them.
    assert "kernel=cuda.direct_dp4a k=3" in lines[3] or "kernel=cuda.direct_imma k=3x3" in lines[3], out


def test_overrides_are_shown_in_the_plan(apron):
    import os
    import subprocess
    from conftest import APRON_PATH
    args = [str(APRON_PATH), "plan", "--op", "box:width=41", "--size", "512x512", "--type", "f32", "--backend", "cpu"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("APRON_")}
    plain = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 0 and "overrides:" not in plain.stdout, plain.stdout
    forced = subprocess.run(args, capture_output=True, text=True, env={**env, "APRON_FFT": "0"}, timeout=60)
    assert "overrides: APRON_FFT=0" in forced.stdout, forced.stdout
    assert "fft" in forced.stdout and "APRON_FFT=0" in forced.stdout.split("overrides:")[1]
