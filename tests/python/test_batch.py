"""`apron batch` (tools/batch_command.cpp, src/batch/): inputs (GenConv job files with padding, list files,
directories, globs), output naming, pipeline files, failures of single images, resume after kill -9, option
and job-file errors, and MPI runs (byte-identical to a plain run).

Pixel values are checked against SciPy `ndimage` on fixed-seed random images; runs of different shapes
(list / directory / glob, pipeline file / --op, MPI / plain, interrupted + resumed / uninterrupted) are
compared byte for byte. Every run uses the CPU backend (APRON_BATCH_BACKEND overrides it) so that the suite
measures the same thing on every machine.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

ndimage = pytest.importorskip("scipy.ndimage")

from conftest import (  # noqa: E402
    APRON_PATH,
    RUN_TIMEOUT_S,
    assert_equal_images,
    assert_f32_close,
    leftovers,
    mpi_env,
    mpi_skip_reason,
    random_image,
    read_pfm,
    read_pnm,
    read_png,
    write_png,
    write_pnm,
)

BACKEND = ["--backend", os.environ.get("APRON_BATCH_BACKEND", "cpu")]

SUMMARY_RE = re.compile(
    r"^apron batch: (?P<done>\d+) of (?P<total>\d+) images done, (?P<skipped>\d+) skipped \(already done\), "
    r"(?P<failed>\d+) failed in [^:]+: [\d.]+ images/s, [\d.]+ Mpix/s",
    re.M,
)
BOTTLENECK_RE = re.compile(r"^bottleneck: (\w+|none) \((\d+% busy(, [\d.]+ GB/s)?|nothing ran)\)\s*$", re.M)
MANIFEST_DIR = ".apron-batch"


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------


def batch(apron, *args, cwd=None, expect: int | None = 0, backend=True) -> subprocess.CompletedProcess:
    """Runs `apron batch ARGS` (with the suite's backend) and checks the exit status when `expect` is set."""
    r = apron.run("batch", *args, *(BACKEND if backend else []), check=False, cwd=cwd)
    if expect is not None:
        assert r.returncode == expect, (
            f"apron batch {' '.join(map(str, args))}: exit {r.returncode}, expected {expect}\n"
            f"stderr:\n{r.stderr}\nstdout:\n{r.stdout}"
        )
    return r


def summary(stderr: str) -> dict[str, int]:
    m = SUMMARY_RE.search(stderr)
    assert m, f"no 'apron batch: D of N images done, ...' summary on stderr:\n{stderr}"
    return {k: int(v) for k, v in m.groupdict().items()}


def failure_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("apron: failed: ")]


def visible_files(directory: Path) -> list[str]:
    """Names of the files of `directory` that are not hidden (the outputs)."""
    return sorted(p.name for p in Path(directory).iterdir() if not p.name.startswith("."))


def manifest_entries(out_dir: Path) -> list[tuple[str, int, str, str]]:
    """Every complete entry line of every manifest-RANK.tsv of `out_dir`, as (OUTPUT, BYTES, CRC, INPUT); a
    last line without its newline (torn by a kill) is not an entry. Lines have eight fields: OUTPUT BYTES
    CRC INPUT INPUT_BYTES INPUT_MTIME_NS INPUT_CRC JOB."""
    entries = []
    for f in sorted((Path(out_dir) / MANIFEST_DIR).glob("manifest-*.tsv")):
        text = f.read_bytes().decode("utf-8", "replace")
        lines = text.split("\n")[:-1]  # the part after the last '\n' is incomplete (or empty)
        for line in lines:
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            assert len(fields) == 8, f"{f}: malformed manifest line {line!r}"
            entries.append((fields[0], int(fields[1]), fields[2], fields[3]))
    return entries


def crc_hex(data: bytes) -> str:
    return f"{zlib.crc32(data) & 0xFFFFFFFF:08x}"


def write_images(directory: Path, names, shape, seed: int, dtype=np.uint8) -> dict[str, np.ndarray]:
    """Random images under `directory`, one seed each; returns name -> array."""
    directory.mkdir(parents=True, exist_ok=True)
    images = {}
    for k, name in enumerate(names):
        img = random_image(shape if not callable(shape) else shape(k), dtype, seed=seed + k)
        write_pnm(directory / name, img)
        images[name] = img
    return images


def dilate_ref(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """dilate:se=rect:WxH with the default border (outside pixels ignored): for a rectangle, SciPy's
    'nearest' gives the same maximum (the replicated pixel is inside the window too)."""
    return ndimage.grey_dilation(img, size=(h, w), mode="nearest")


def erode_ref(img: np.ndarray, w: int, h: int) -> np.ndarray:
    return ndimage.grey_erosion(img, size=(h, w), mode="nearest")


def same_bytes(dir_a: Path, dir_b: Path, names=None):
    """Every output (non-hidden file) of the two directories, byte for byte."""
    a, b = visible_files(dir_a), visible_files(dir_b)
    assert a == b, f"different outputs: {dir_a}: {a} vs {dir_b}: {b}"
    if names is not None:
        assert a == sorted(names), (a, sorted(names))
    for name in a:
        assert (Path(dir_a) / name).read_bytes() == (Path(dir_b) / name).read_bytes(), f"{name} differs"


def write_job(path: Path, paths, bits=8, max_size=(64, 48), pad=(0, 0), count=None):
    lines = [str(len(paths) if count is None else count), str(bits), f"{max_size[0]} {max_size[1]}",
             f"{pad[0]} {pad[1]}", *paths]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------------------------------------
# 1. GenConv job file with padding
# ---------------------------------------------------------------------------------------------------------


def test_job_file_padding_is_cropped_after_filtering(apron, tmp_path):
    """The filter runs on the whole padded image (its border beyond it) and the padding is cropped: a W x H
    input gives (W - 2 padX) x (H - 2 padY), equal to the reference on the padded image, cropped. Padding
    3,2 (not square) catches an x/y swap; near the crop edge the result depends on the padding pixels, so
    filtering the interior alone would differ."""
    work = tmp_path / "work"
    sizes = {"a.pgm": (48, 64), "b.pgm": (50, 71), "c.pgm": (80, 100)}  # (H, W)
    imgs = {}
    for k, (name, shape) in enumerate(sizes.items()):
        imgs[name] = random_image(shape, np.uint8, seed=100 + k)
        (work / "imgs").mkdir(parents=True, exist_ok=True)
        write_pnm(work / "imgs" / name, imgs[name])
    write_job(work / "job.txt", [f"imgs/{n}" for n in sizes], bits=8, max_size=(100, 80), pad=(3, 2))

    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:5x5", cwd=work)
    s = summary(r.stderr)
    assert (s["done"], s["total"], s["skipped"], s["failed"]) == (3, 3, 0, 0), r.stderr
    assert BOTTLENECK_RE.search(r.stderr), f"no 'bottleneck: STAGE (NN% busy)' line:\n{r.stderr}"
    assert r.stderr.rstrip().splitlines()[-1].startswith("bottleneck: "), r.stderr

    assert visible_files(work / "out") == sorted(sizes)
    for name, img in imgs.items():
        got = read_pnm(work / "out" / name)
        h, w = img.shape
        assert got.shape == (h - 4, w - 6), f"{name}: {got.shape}, expected the interior {(h - 4, w - 6)}"
        expected = dilate_ref(img, 5, 5)[2:-2, 3:-3]
        assert_equal_images(got, expected, f"{name} (padded dilate, cropped)")
        # the test can tell: filtering the cropped interior alone gives other pixels at the edges
        assert not np.array_equal(dilate_ref(img[2:-2, 3:-3], 5, 5), expected)


def test_job_file_paths_are_relative_to_the_current_directory(apron, tmp_path):
    """Relative image paths of a job file are resolved from the current directory, not from the job file's
    directory: decoys with other pixels sit next to the job file under the same relative names."""
    work = tmp_path / "work"
    imgs = write_images(work / "imgs", ["p.pgm", "q.pgm"], (40, 52), seed=120)
    write_images(work / "jobs" / "imgs", ["p.pgm", "q.pgm"], (40, 52), seed=130)  # decoys
    write_job(work / "jobs" / "job.txt", ["imgs/p.pgm", "imgs/q.pgm"], bits=8, max_size=(52, 40), pad=(1, 1))

    batch(apron, "jobs/job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "-q", cwd=work)
    for name, img in imgs.items():
        assert_equal_images(read_pnm(work / "out" / name), dilate_ref(img, 3, 3)[1:-1, 1:-1], name)

    # from another directory the same relative paths name nothing: an error before the batch, naming the image
    r = batch(apron, "work/jobs/job.txt", "-o", "out2", "--op", "dilate:se=rect:3x3", cwd=tmp_path, expect=1)
    assert "imgs/p.pgm" in r.stderr and "work/jobs/job.txt:5" in r.stderr, r.stderr
    assert not (tmp_path / "out2").exists()


def test_job_file_16_bit(apron, tmp_path):
    """bits 16: u16 images are accepted and stay u16."""
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (30, 45), seed=140, dtype=np.uint16)
    write_job(tmp_path / "job.txt", ["imgs/a.pgm", "imgs/b.pgm"], bits=16, max_size=(45, 30), pad=(2, 1))
    batch(apron, "job.txt", "-o", "out", "--op", "erode:se=rect:3x5", "-q", cwd=tmp_path)
    for name, img in imgs.items():
        got = read_pnm(tmp_path / "out" / name)
        assert got.dtype == np.uint16
        assert_equal_images(got, erode_ref(img, 3, 5)[1:-1, 2:-2], name)


# ---------------------------------------------------------------------------------------------------------
# 2. list file, directory and glob; naming and formats
# ---------------------------------------------------------------------------------------------------------


def test_list_directory_and_glob_give_the_same_outputs(apron, tmp_path):
    names = ["a1.pgm", "b2.pgm", "c3.pgm", "d4.pgm"]
    imgs = write_images(tmp_path / "imgs", names, lambda k: (40 + 3 * k, 64 - 2 * k), seed=200)
    (tmp_path / "imgs" / "notes.txt").write_text("not an image: a directory input skips it\n")
    (tmp_path / "list.txt").write_text(
        "# the images, in directory order\n\n" + "".join(f"  imgs/{n}\n" for n in names) + "# end\n"
    )
    op = ["--op", "erode:se=rect:3x5"]
    batch(apron, "list.txt", "-o", "by_list", *op, "-q", cwd=tmp_path)
    batch(apron, "imgs", "-o", "by_dir", *op, "-q", cwd=tmp_path)
    batch(apron, "imgs/*.pgm", "-o", "by_glob", *op, "-q", cwd=tmp_path)
    batch(apron, "list.txt", "-o", "by_forced_list", "--inputs-as", "list", *op, "-q", cwd=tmp_path)

    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "by_list" / name), erode_ref(img, 3, 5), name)
    for other in ("by_dir", "by_glob", "by_forced_list"):
        same_bytes(tmp_path / "by_list", tmp_path / other, names)

    # the CLI's `apron filter` makes the very same file
    apron.filter_files(tmp_path / "imgs" / names[1], tmp_path / "single.pgm", "erode:se=rect:3x5", extra=BACKEND)
    assert (tmp_path / "single.pgm").read_bytes() == (tmp_path / "by_list" / names[1]).read_bytes()


def test_name_pattern_index_and_formats(apron, tmp_path):
    names = ["zeta.pgm", "alpha.pgm", "mid.pgm"]  # listed out of alphabetical order: {index} is the list order
    imgs = write_images(tmp_path / "imgs", names, (33, 47), seed=220)
    (tmp_path / "list.txt").write_text("".join(f"imgs/{n}\n" for n in names))
    op = ["--op", "dilate:se=rect:3x3"]

    batch(apron, "list.txt", "-o", "png", "--name", "img_{index:3}.{ext}", "--format", "png", *op, "-q", cwd=tmp_path)
    assert visible_files(tmp_path / "png") == ["img_000.png", "img_001.png", "img_002.png"]
    for k, name in enumerate(names):
        f = tmp_path / "png" / f"img_{k:03d}.png"
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{f} is not a PNG file"
        got = read_png(f)
        assert_equal_images(got, dilate_ref(imgs[name], 3, 3), f"{f.name} ({name})")

    batch(apron, "list.txt", "-o", "pgm", "--name", "{stem}-{index}_d.{ext}", "--format", "pgm", *op, "-q", cwd=tmp_path)
    assert visible_files(tmp_path / "pgm") == sorted(f"{Path(n).stem}-{k}_d.pgm" for k, n in enumerate(names))
    for k, name in enumerate(names):
        f = tmp_path / "pgm" / f"{Path(name).stem}-{k}_d.pgm"
        assert f.read_bytes()[:2] == b"P5"
        assert_equal_images(read_pnm(f), dilate_ref(imgs[name], 3, 3), f.name)

    # {name} keeps the whole input name; with --format png and a literal extension
    batch(apron, "list.txt", "-o", "named", "--name", "{name}.png", "--format", "png", *op, "-q", cwd=tmp_path)
    assert visible_files(tmp_path / "named") == sorted(f"{n}.png" for n in names)


def test_png_input_to_pgm_output(apron, tmp_path):
    """--format pgm from PNG inputs: the same pixels, {ext} becomes pgm."""
    pytest.importorskip("cv2")
    imgs = {}
    (tmp_path / "imgs").mkdir()
    for k, name in enumerate(["a.png", "b.png"]):
        imgs[name] = random_image((36, 28), np.uint8, seed=240 + k)
        write_png(tmp_path / "imgs" / name, imgs[name])
    batch(apron, "imgs", "-o", "out", "--format", "pgm", "--op", "erode:se=rect:5x3", "-q", cwd=tmp_path)
    assert visible_files(tmp_path / "out") == ["a.pgm", "b.pgm"]
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / (Path(name).stem + ".pgm")), erode_ref(img, 5, 3), name)


# ---------------------------------------------------------------------------------------------------------
# 3. pipeline files
# ---------------------------------------------------------------------------------------------------------


def test_pipeline_file_equals_op_options(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm", "c.pgm"], (48, 64), seed=300)
    pipeline = {
        "ops": [
            "erode:se=rect:3x3",
            {"op": "gaussian", "sigma": 1.5, "border": "nearest"},
            {"op": "dilate", "se": "cross:3x3", "iterations": 2},
        ]
    }
    (tmp_path / "p.json").write_text(json.dumps(pipeline, indent=2))
    ops = ["--op", "erode:se=rect:3x3", "--op", "gaussian:sigma=1.5,border=nearest",
           "--op", "dilate:se=cross:3x3,iterations=2"]
    batch(apron, "imgs", "-o", "by_file", "--pipeline", "p.json", "-q", cwd=tmp_path)
    batch(apron, "imgs", "-o", "by_ops", *ops, "-q", cwd=tmp_path)
    same_bytes(tmp_path / "by_file", tmp_path / "by_ops", list(imgs))
    for name, img in imgs.items():
        assert not np.array_equal(read_pnm(tmp_path / "by_file" / name), img), "the pipeline changed nothing"


def test_pipeline_file_out_type_and_values(apron, tmp_path):
    """out_type in the file is honoured (f32 PFM outputs) and the values are SciPy's: gaussian(erode(x))."""
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (40, 56), seed=320)
    (tmp_path / "p.json").write_text(
        json.dumps({"ops": ["erode:se=rect:3x3", {"op": "gaussian", "sigma": 1.5, "border": "nearest"}],
                    "out_type": "f32"})
    )
    batch(apron, "imgs", "-o", "by_file", "--pipeline", "p.json", "--format", "pfm", "-q", cwd=tmp_path)
    batch(apron, "imgs", "-o", "by_ops", "--op", "erode:se=rect:3x3", "--op", "gaussian:sigma=1.5,border=nearest",
          "--out-type", "f32", "--format", "pfm", "-q", cwd=tmp_path)
    same_bytes(tmp_path / "by_file", tmp_path / "by_ops", ["a.pfm", "b.pfm"])
    for name, img in imgs.items():
        got = read_pfm(tmp_path / "by_file" / (Path(name).stem + ".pfm"))
        eroded = erode_ref(img, 3, 3).astype(np.float64)
        expected = ndimage.gaussian_filter(eroded, sigma=1.5, mode="nearest", radius=5)  # radius ceil(3 sigma)
        assert_f32_close(got, expected, bound=255.0, what=name)


def test_pipeline_file_errors(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 20), seed=340)
    cases = {
        "unknown_param.json": ({"ops": [{"op": "gaussian", "sigmaa": 2}]}, "ops[0].sigmaa"),
        "bad_value.json": ({"ops": ["dilate:se=rect:3x3", {"op": "gaussian", "sigma": -1}]}, "ops[1].sigma"),
        "no_ops.json": ({"out_type": "u8"}, "ops"),
        "unknown_op.json": ({"ops": [{"op": "blurr"}]}, "ops[0].op"),
    }
    for fname, (content, where) in cases.items():
        (tmp_path / fname).write_text(json.dumps(content))
        r = batch(apron, "imgs", "-o", "out", "--pipeline", fname, cwd=tmp_path, expect=1)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and fname in lines[0] and where in lines[0], f"{fname}: {r.stderr}"
    (tmp_path / "syntax.json").write_text('{"ops": ["dilate",]\n')
    r = batch(apron, "imgs", "-o", "out", "--pipeline", "syntax.json", cwd=tmp_path, expect=1)
    assert "syntax.json" in r.stderr and "line" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------
# 4. MPI
# ---------------------------------------------------------------------------------------------------------


MPI_SKIP = mpi_skip_reason()


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_mpi_outputs_identical_and_manifests_cover_every_output(apron, tmp_path):
    names = [f"im{k:02d}.pgm" for k in range(11)]
    write_images(tmp_path / "imgs", names, lambda k: (40 + 7 * (k % 4), 60 + 11 * (k % 3)), seed=400)
    args = ["imgs", "--op", "gaussian:sigma=2", "--op", "dilate:se=rect:3x3", *BACKEND, "--threads", "1"]
    env = mpi_env()

    def mpirun(np_, out):
        cmd = ["mpirun", "--oversubscribe", "-np", str(np_), str(apron.path), "batch", *args, "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=4 * RUN_TIMEOUT_S)
        assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}\n{r.stdout}"
        return r

    batch(apron, *args, "-o", "plain", "-q", cwd=tmp_path, backend=False)
    r1 = mpirun(1, "np1")
    r3 = mpirun(3, "np3")
    same_bytes(tmp_path / "plain", tmp_path / "np1", names)
    same_bytes(tmp_path / "plain", tmp_path / "np3", names)

    for r, ranks in ((r1, 1), (r3, 3)):
        s = summary(r.stderr)
        assert (s["done"], s["total"], s["skipped"], s["failed"]) == (len(names), len(names), 0, 0), r.stderr
        assert len(SUMMARY_RE.findall(r.stderr)) == 1, f"the summary must come from rank 0 only:\n{r.stderr}"
    assert "3 ranks" in r3.stderr, r3.stderr

    manifests = sorted(p.name for p in (tmp_path / "np3" / MANIFEST_DIR).glob("manifest-*.tsv"))
    assert manifests == ["manifest-0.tsv", "manifest-1.tsv", "manifest-2.tsv"], manifests
    entries = manifest_entries(tmp_path / "np3")
    listed = sorted(e[0] for e in entries)
    assert listed == names, f"manifest entries {listed} do not cover every output exactly once"
    for out, size, crc, _ in entries:
        data = (tmp_path / "np3" / out).read_bytes()
        assert (len(data), crc_hex(data)) == (size, crc), f"manifest entry of {out} does not match the file"


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_mpi_failed_image_reported_once(apron, tmp_path):
    """A corrupt image under mpirun: exit 5, the failure and the summary printed once (by rank 0), the
    other outputs written."""
    names = [f"g{k}.pgm" for k in range(5)]
    write_images(tmp_path / "imgs", names, (30, 40), seed=420)
    (tmp_path / "imgs" / "g2_bad.pgm").write_bytes(b"P5\n40 30\n255\n" + b"\0" * 100)
    env = mpi_env()
    cmd = ["mpirun", "--oversubscribe", "-np", "3", str(apron.path), "batch", "imgs", "-o", "out",
           "--op", "dilate:se=rect:3x3", *BACKEND, "--threads", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=4 * RUN_TIMEOUT_S)
    assert r.returncode == 5, f"exit {r.returncode}\n{r.stderr}"
    fails = failure_lines(r.stderr)
    assert len(fails) == 1 and "g2_bad.pgm" in fails[0], r.stderr
    assert len(SUMMARY_RE.findall(r.stderr)) == 1, r.stderr
    s = summary(r.stderr)
    assert (s["done"], s["total"], s["failed"]) == (5, 6, 1), r.stderr
    assert visible_files(tmp_path / "out") == names


# ---------------------------------------------------------------------------------------------------------
# 5. kill -9 and resume
# ---------------------------------------------------------------------------------------------------------

# Slow enough (a 169x169 direct correlation, ~40 ms per 256x256 image on one thread) that the run can be
# caught in the middle.
SLOW_OP = ["--op", "gaussian:sigma=28", "--algo", "direct"]
SLOW_THREADS = ["--threads", "1", "--io-threads", "1"]


def test_kill_and_resume(apron, tmp_path):
    names = [f"s{k:02d}.pgm" for k in range(40)]
    write_images(tmp_path / "imgs", names, (256, 256), seed=500)
    common = ["imgs", *SLOW_OP, *SLOW_THREADS]

    t0 = time.monotonic()
    batch(apron, *common, "-o", "ref", "-q", cwd=tmp_path)
    full_run_s = time.monotonic() - t0

    out = tmp_path / "out"
    manifest = out / MANIFEST_DIR / "manifest-0.tsv"
    cmd = [str(apron.path), "batch", *common, *BACKEND, "-o", "out"]
    with open(tmp_path / "killed.stderr", "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while time.monotonic() < deadline and proc.poll() is None:
                if manifest.is_file() and len(manifest_entries(out)) >= 3:
                    break
                time.sleep(0.005)
            finished = proc.poll() is not None
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert not finished, (
        f"the run ended before it could be interrupted (an uninterrupted run took {full_run_s:.2f} s): "
        "make SLOW_OP slower"
    )
    entries = manifest_entries(out)
    hidden = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    print(f"killed with {len(entries)} of {len(names)} outputs listed (uninterrupted run: {full_run_s:.2f} s); "
          f"hidden files: {hidden}")
    assert 3 <= len(entries) < len(names), f"{len(entries)} manifest entries at the kill"

    # nothing but complete outputs under the outputs' names; temporaries are hidden ('.NAME.apron-tmp-...')
    for p in out.iterdir():
        if p.name.startswith("."):
            assert p.name == MANIFEST_DIR or "apron-tmp" in p.name, f"unexpected hidden file {p.name}"
            continue
        assert p.name in names, f"unexpected file {p.name} after the kill"
        assert p.read_bytes() == (tmp_path / "ref" / p.name).read_bytes(), f"{p.name}: partial or wrong output"
    listed = [e[0] for e in entries]
    assert len(set(listed)) == len(listed), f"an output listed twice: {listed}"
    for name, size, crc, _ in entries:
        data = (out / name).read_bytes()
        assert (len(data), crc_hex(data)) == (size, crc), f"{name}: manifest entry does not match the file"

    # a temporary file as a kill in the middle of a write leaves it: the resumed run removes it
    (out / ".s39.pgm.apron-tmp-Xy12Ab").write_bytes(b"P5\n256 256\n255\n" + b"\0" * 1000)

    r = batch(apron, *common, "-o", "out", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert s["skipped"] == len(entries), f"{len(entries)} outputs were listed intact, resume skipped:\n{r.stderr}"
    assert (s["done"] + s["skipped"], s["total"], s["failed"]) == (len(names), len(names), 0), r.stderr
    same_bytes(tmp_path / "ref", out, names)
    assert leftovers(out) == [], f"temporary files left after the resume: {leftovers(out)}"
    after = sorted(e[0] for e in manifest_entries(out))
    assert after == names, f"the manifest after the resume lists {after}"


# ---------------------------------------------------------------------------------------------------------
# 6. corrupt inputs among good ones
# ---------------------------------------------------------------------------------------------------------


def test_corrupt_images_fail_alone(apron, tmp_path):
    good = ["00.pgm", "01.pgm", "02.pgm", "05.pgm", "06.pgm", "07.pgm"]
    imgs = write_images(tmp_path / "imgs", good, (48, 64), seed=600)
    full = b"P5\n64 48\n255\n" + random_image((48, 64), np.uint8, seed=610).tobytes()
    (tmp_path / "imgs" / "03_truncated.pgm").write_bytes(full[: len(full) // 2])
    (tmp_path / "imgs" / "04_garbage.png").write_bytes(np.random.default_rng(611).bytes(3000))

    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:5x5", cwd=tmp_path, expect=5)
    fails = failure_lines(r.stderr)
    assert len(fails) == 2, r.stderr
    assert any("03_truncated.pgm" in f for f in fails), fails
    assert any("04_garbage.png" in f for f in fails), fails
    s = summary(r.stderr)
    assert (s["done"], s["total"], s["skipped"], s["failed"]) == (6, 8, 0, 2), r.stderr

    assert visible_files(tmp_path / "out") == good
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / name), dilate_ref(img, 5, 5), name)
    assert leftovers(tmp_path / "out") == []
    assert sorted(e[0] for e in manifest_entries(tmp_path / "out")) == good

    # --quiet: no summary, the failures still reported
    r = batch(apron, "imgs", "-o", "out_q", "--op", "dilate:se=rect:5x5", "-q", cwd=tmp_path, expect=5)
    assert len(failure_lines(r.stderr)) == 2 and not SUMMARY_RE.search(r.stderr), r.stderr


# ---------------------------------------------------------------------------------------------------------
# 7. malformed job files
# ---------------------------------------------------------------------------------------------------------

JOB_ERRORS = {
    # name: (job file text, line named, extra batch args, text the message must hold)
    "count_too_large": ("3\n8\n64 48\n0 0\nimgs/a.pgm\nimgs/b.pgm\n", 1, [], "3 images"),
    "count_too_small": ("1\n8\n64 48\n0 0\nimgs/a.pgm\nimgs/b.pgm\n", 6, [], "imgs/b.pgm"),
    "bad_bits": ("2\n12\n64 48\n0 0\nimgs/a.pgm\nimgs/b.pgm\n", 2, [], "12"),
    "bad_bits_after_blank": ("2\n\n7\n64 48\n0 0\nimgs/a.pgm\nimgs/b.pgm\n", 3, [], "7"),
    "non_numeric_size": ("2\n8\n64 abc\n0 0\nimgs/a.pgm\nimgs/b.pgm\n", 3, ["--inputs-as", "job"], "abc"),
    "padding_too_large": ("2\n8\n64 48\n0 24\nimgs/a.pgm\nimgs/b.pgm\n", 4, [], "padding"),
    "missing_image": ("2\n8\n64 48\n0 0\nimgs/a.pgm\nimgs/missing.pgm\n", 6, [], "imgs/missing.pgm"),
}


@pytest.mark.parametrize("case", sorted(JOB_ERRORS))
def test_malformed_job_file(apron, tmp_path, case):
    text, line, extra, needle = JOB_ERRORS[case]
    write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (48, 64), seed=700)
    (tmp_path / "job.txt").write_text(text)
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate", *extra, cwd=tmp_path, expect=1)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr:\n{r.stderr}"
    assert f"job.txt:{line}:" in lines[0], f"the message must name job.txt:{line}: {lines[0]}"
    assert needle in lines[0], f"the message must show {needle!r}: {lines[0]}"
    assert not (tmp_path / "out").exists(), "an error before the batch must not create the output directory"


def test_non_numeric_job_header_detected_automatically(apron, tmp_path):
    """Without --inputs-as job a file starting with a count and a bits line is a job file, so a malformed size
    line is reported as such: exit 1 and one line naming the file and line 3."""
    write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (48, 64), seed=710)
    (tmp_path / "job.txt").write_text("2\n8\n64 abc\n0 0\nimgs/a.pgm\nimgs/b.pgm\n")
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate", cwd=tmp_path, expect=1)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "job.txt:3" in lines[0], r.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------------
# 8. job file checks on each image
# ---------------------------------------------------------------------------------------------------------


def test_job_bit_depth_and_size_mismatch_fail_alone(apron, tmp_path):
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "d.pgm"], (48, 64), seed=800)
    write_pnm(tmp_path / "imgs" / "w16.pgm", random_image((48, 64), np.uint16, seed=801))
    write_pnm(tmp_path / "imgs" / "big.pgm", random_image((48, 65), np.uint8, seed=802))  # 65 > maxW 64
    write_job(tmp_path / "job.txt", ["imgs/a.pgm", "imgs/w16.pgm", "imgs/big.pgm", "imgs/d.pgm"], bits=8,
              max_size=(64, 48), pad=(1, 2))
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:5x5", cwd=tmp_path, expect=5)
    fails = failure_lines(r.stderr)
    assert len(fails) == 2, r.stderr
    assert any("w16.pgm" in f for f in fails) and any("big.pgm" in f for f in fails), fails
    s = summary(r.stderr)
    assert (s["done"], s["total"], s["failed"]) == (2, 4, 2), r.stderr
    assert visible_files(tmp_path / "out") == ["a.pgm", "d.pgm"]
    for name, img in imgs.items():
        assert_equal_images(read_pnm(tmp_path / "out" / name), dilate_ref(img, 5, 5)[2:-2, 1:-1], name)


# ---------------------------------------------------------------------------------------------------------
# 9. --dry-run
# ---------------------------------------------------------------------------------------------------------


def test_dry_run_writes_nothing(apron, tmp_path):
    names = [f"d{k:02d}.pgm" for k in range(12)]
    write_images(tmp_path / "imgs", names, (30, 40), seed=900)
    r = batch(apron, "imgs", "-o", "out", "--op", "gaussian:sigma=2", "--dry-run", cwd=tmp_path)
    assert r.stdout.startswith("12 images"), r.stdout
    assert "plan for" in r.stdout and "(40x30)" in r.stdout, r.stdout
    assert "d00.pgm" in r.stdout and "2 more" in r.stdout, r.stdout
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "--dry-run wrote files"

    write_job(tmp_path / "job.txt", [f"imgs/{n}" for n in names[:3]], bits=8, max_size=(40, 30), pad=(3, 2))
    r = batch(apron, "job.txt", "-o", "out", "--op", "gaussian:sigma=2", "--dry-run", cwd=tmp_path)
    assert r.stdout.startswith("3 images"), r.stdout
    assert "8-bit" in r.stdout and "40x30" in r.stdout and "3,2" in r.stdout, r.stdout
    assert "compute: CPU backend" in r.stdout, r.stdout
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "--dry-run wrote files"

    # The dry run checks the compute options as the real run does.
    r = batch(apron, "imgs", "-o", "out", "--op", "gaussian:sigma=2", "--dry-run", "--devices", "0", cwd=tmp_path,
              expect=1)
    assert "--devices" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---------------------------------------------------------------------------------------------------------
# 10. resume and the fingerprint
# ---------------------------------------------------------------------------------------------------------


def test_resume_skips_only_intact_outputs_of_the_same_pipeline(apron, tmp_path):
    names = ["r0.pgm", "r1.pgm", "r2.pgm", "r3.pgm", "r4.pgm"]
    imgs = write_images(tmp_path / "imgs", names, (40, 50), seed=1000)
    out = tmp_path / "out"
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", cwd=tmp_path)

    # another op: the fingerprint differs, nothing is skipped, every output is the new op's
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (5, 0, 0), r.stderr
    for name, img in imgs.items():
        assert_equal_images(read_pnm(out / name), erode_ref(img, 3, 3), name)

    # the same op again: everything skipped, nothing rewritten
    before = {n: (out / n).read_bytes() for n in names}
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (0, 5, 0), r.stderr
    assert {n: (out / n).read_bytes() for n in names} == before

    # another output option (--out-type) is another fingerprint too
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", "--out-type", "u16", "--resume",
              cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"]) == (5, 0), r.stderr
    assert read_pnm(out / names[0]).dtype == np.uint16
    batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", cwd=tmp_path, expect=0)  # back to u8

    # a damaged output (same size, one byte changed) and a deleted one are made again; the rest skipped
    damaged = bytearray((out / "r1.pgm").read_bytes())
    damaged[-1] ^= 0xFF
    (out / "r1.pgm").write_bytes(bytes(damaged))
    (out / "r3.pgm").unlink()
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (2, 3, 0), r.stderr
    assert {n: (out / n).read_bytes() for n in names} == before
    assert sorted(e[0] for e in manifest_entries(out)) == names

    # without --resume everything is made again
    r = batch(apron, "imgs", "-o", "out", "--op", "erode:se=rect:3x3", cwd=tmp_path)
    assert summary(r.stderr)["done"] == 5 and summary(r.stderr)["skipped"] == 0, r.stderr


def test_resume_skips_an_output_whose_name_starts_with_a_hash(apron, tmp_path):
    """A manifest line starting with '#' is a comment: an output named "#1.pgm" must still be found done."""
    names = ["#1.pgm", "#two#.pgm", "plain.pgm"]
    write_images(tmp_path / "imgs", names, (21, 17), seed=1040)
    batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "-q", cwd=tmp_path)
    r = batch(apron, "imgs", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    s = summary(r.stderr)
    assert (s["done"], s["skipped"], s["failed"]) == (0, 3, 0), r.stderr


def test_resume_after_job_padding_change_redoes_the_outputs(apron, tmp_path):
    """The job file's padding decides the output (its size): outputs of a run with other padding are not
    'already done'."""
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (48, 64), seed=1050)
    write_job(tmp_path / "job.txt", ["imgs/a.pgm", "imgs/b.pgm"], bits=8, max_size=(64, 48), pad=(1, 1))
    batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "-q", cwd=tmp_path)
    write_job(tmp_path / "job.txt", ["imgs/a.pgm", "imgs/b.pgm"], bits=8, max_size=(64, 48), pad=(4, 3))
    r = batch(apron, "job.txt", "-o", "out", "--op", "dilate:se=rect:3x3", "--resume", cwd=tmp_path)
    for name, img in imgs.items():
        got = read_pnm(tmp_path / "out" / name)
        assert got.shape == (42, 56), f"{name}: {got.shape} after resuming with padding 4,3:\n{r.stderr}"
        assert_equal_images(got, dilate_ref(img, 3, 3)[3:-3, 4:-4], name)


def test_resume_after_the_mask_file_changes_redoes_the_outputs(apron, tmp_path):
    """The fingerprint holds the CRC-32 of the weights of every mask the ops hold: after editing a mask file, --resume redoes
    every output (same op text, other weights), and the new outputs follow the new mask."""
    imgs = write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (48, 64), seed=1060)
    mask = tmp_path / "m.kernel"
    mask.write_text("3 3\n0 0 0\n0 1 0\n0 0 0\n")  # identity
    op = f"correlate:mask={mask},border=nearest"
    batch(apron, "imgs", "-o", "out", "--op", op, "-q", cwd=tmp_path)
    r = batch(apron, "imgs", "-o", "out", "--op", op, "--resume", cwd=tmp_path)
    assert summary(r.stderr)["skipped"] == 2, r.stderr
    mask.write_text("3 3\n0 0 0\n0 0 1\n0 0 0\n")  # the right neighbour
    r = batch(apron, "imgs", "-o", "out", "--op", op, "--resume", cwd=tmp_path)
    assert summary(r.stderr)["skipped"] == 0, r.stderr
    for name, img in imgs.items():
        want = np.concatenate([img[:, 1:], img[:, -1:]], axis=1)
        assert_equal_images(read_pnm(tmp_path / "out" / name), want, name)


# ---------------------------------------------------------------------------------------------------------
# 11. option errors
# ---------------------------------------------------------------------------------------------------------

OPTION_ERRORS = {
    # name: (arguments after INPUTS -o out, text the one-line message must hold)
    "op_and_pipeline": (["--op", "dilate", "--pipeline", "p.json"], ["--op", "--pipeline"]),
    "neither_op_nor_pipeline": ([], ["--op", "--pipeline"]),
    "devices_on_cpu": (["--op", "dilate", "--devices", "0"], ["--devices"]),
    "bad_devices_list": (["--op", "dilate", "--devices", "0,x"], ["--devices"]),
    "bad_format": (["--op", "dilate", "--format", "bmpx"], ["--format", "bmpx"]),
    "bad_name_field": (["--op", "dilate", "--name", "{stem}_{foo}.{ext}"], ["{foo}", "pattern"]),
    "bad_name_index_width": (["--op", "dilate", "--name", "{index:0}.{ext}"], ["{index:0}", "pattern"]),
    "name_with_slash": (["--op", "dilate", "--name", "sub/{name}"], ["'/'", "pattern"]),
    "name_collision": (["--op", "dilate", "--name", "same.pgm"], ["same.pgm", "{index}"]),
    "bad_out_type": (["--op", "dilate", "--out-type", "u12"], ["--out-type", "u12"]),
    "bad_backend": (["--op", "dilate", "--backend", "tpu"], ["--backend", "tpu"]),
    "bad_algo": (["--op", "dilate", "--algo", "magic"], ["--algo", "magic"]),
    "bad_inputs_as": (["--op", "dilate", "--inputs-as", "tar"], ["--inputs-as", "tar"]),
    "bad_threads": (["--op", "dilate", "--threads", "-1"], ["--threads"]),
    "bad_io_threads": (["--op", "dilate", "--io-threads", "300"], ["--io-threads"]),
    "bad_io_threads_negative": (["--op", "dilate", "--io-threads", "-2"], ["--io-threads"]),
    "bad_streams": (["--op", "dilate", "--streams", "0"], ["--streams"]),
    "bad_quality": (["--op", "dilate", "--quality", "0"], ["--quality"]),
    "bad_max_pixels": (["--op", "dilate", "--max-pixels", "0"], ["--max-pixels"]),
    "bad_op": (["--op", "dilate:se=rect:0x3"], ["dilate"]),
    "unknown_op": (["--op", "dilatee"], ["dilatee"]),
    "name_ext_disagrees_with_format": (["--op", "dilate", "--name", "{stem}.png", "--format", "pgm"], ["pattern"]),
}


@pytest.mark.parametrize("case", sorted(OPTION_ERRORS))
def test_option_errors(apron, tmp_path, case):
    args, needles = OPTION_ERRORS[case]
    write_images(tmp_path / "imgs", ["a.pgm", "b.pgm"], (20, 24), seed=1100)
    (tmp_path / "p.json").write_text('{"ops": ["dilate"]}')
    # --backend comes from the case when it names one
    r = batch(apron, "imgs", "-o", "out", *args, cwd=tmp_path, expect=1, backend="--backend" not in args)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("apron: "), f"expected one 'apron: ...' line:\n{r.stderr}"
    for needle in needles:
        assert needle in lines[0], f"the message must name {needle!r}: {lines[0]}"
    assert not (tmp_path / "out").exists(), "an option error must not create the output directory"


def test_input_errors(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=1150)
    (tmp_path / "empty").mkdir()
    (tmp_path / "list.txt").write_text("imgs/a.pgm\n# comment\nimgs/nope.pgm\n")
    cases = [
        (["nothing_here"], "nothing_here"),
        (["nothing*.pgm"], "nothing*.pgm"),
        (["empty"], "empty"),
        (["list.txt"], "list.txt:3"),
        (["imgs", "imgs"], "twice"),
    ]
    for inputs, needle in cases:
        r = batch(apron, *inputs, "-o", "out", "--op", "dilate", cwd=tmp_path, expect=1)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], f"{inputs}: {r.stderr}"
    assert not (tmp_path / "out").exists()


def test_output_would_overwrite_input(apron, tmp_path):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=1160)
    before = (tmp_path / "imgs" / "a.pgm").read_bytes()
    r = batch(apron, "imgs", "-o", "imgs", "--op", "dilate", cwd=tmp_path, expect=1)
    assert "overwrite" in r.stderr, r.stderr
    assert (tmp_path / "imgs" / "a.pgm").read_bytes() == before


@pytest.mark.parametrize("args", [["--op", "dilate"], ["imgs", "--op", "dilate"], ["imgs", "-o", "out", "--bogus"]],
                         ids=["no_inputs", "no_output_dir", "unknown_option"])
def test_parse_errors_exit_2(apron, tmp_path, args):
    write_images(tmp_path / "imgs", ["a.pgm"], (20, 24), seed=1170)
    if "-o" not in args and args[0] == "--op":
        args = ["-o", "out", *args]
    r = batch(apron, *args, cwd=tmp_path, expect=2)
    assert r.stderr.strip(), "a parse error must say what is wrong"
    assert not (tmp_path / "out").exists()
