"""Every command that README.md and docs/*.md show runs as written, and the docs' synopses name real options.

Each fenced line that starts with `apron`, `mpirun ... apron`, `VAR=value apron` or `python3 bench/` is a case.
It runs in one scratch folder (module scope, in the docs' order, so a `--resume` line follows the run it resumes)
that holds small stand-ins for the files the docs name: in.png, slide.tif, job.txt, scans/, ... A stand-in keeps
the kind of file the docs mean (a tiled TIFF for a slide, a GenConv job file, 16-bit little-endian PGM for
GenConv's); only sizes shrink, through SHRINK, which is written out here so a reader sees each change.
Lines that need what CI has not (a GPU, a peer's CSVs) are skipped with the reason, never silently: NEEDS says
which. A synopsis line (one with `[...]` or capitalised placeholders) is not run; every option it names must be
an option of that subcommand's --help.

Claims in the docs' prose that are cheap to check are asserted at the end of this file.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT, mpi_env, mpi_skip_reason, write_mask, write_pnm

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
RUN_TIMEOUT_S = 300

# Sizes the docs use for huge images, and what the scratch copies of them are.
SHRINK = {"65536x65536x1:u16": "640x480x1:u16", "1024x1024x256x1:u16": "64x48x8x1:u16"}

# Lines that cannot run on a machine like CI's, by a piece of their text, with the reason.
NEEDS = {
    "--backend cuda": "a GPU (CUDA backend)",
    "my-gpu.tsv": "the GPU calibration table of the line before",
    "torch_cupy_peers.py": "a GPU and the peers (torch, CuPy)",
    "bench/report.py apron.csv": "the CSV files of a GPU benchmark run",
    "$OUT/": "a GPU benchmark run's output folder",
}
PLACEHOLDER = "--op ..."  # a line that shows a variant, not a command: "--op ... --byte-order little"


def _fenced_lines(doc: Path):
    inside = False
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if inside:
            yield number, line.strip()


def _is_command(text: str) -> bool:
    text = text.removeprefix("$ ")
    words = text.split()
    while words and re.fullmatch(r"[A-Z_]+=\S+", words[0]):
        words = words[1:]
    if not words:
        return False
    if words[0] == "mpirun":
        return "apron" in words
    return words[0] == "apron" or (words[0] == "python3" and len(words) > 1 and words[1].startswith("bench/"))


def _is_synopsis(text: str) -> bool:
    """A usage line: options in brackets, capitalised placeholders, or a description column after a gap."""
    return "[" in text or bool(re.search(r"\b(INPUT|OUTPUT|OP|FILE|DIR)\b", text)) or bool(re.search(r"\S {3,}[a-z]", text))


def doc_commands():
    for doc in DOCS:
        current = None  # a synopsis goes on over the lines that start with '[' or '('
        for number, text in _fenced_lines(doc):
            if current and text.startswith(("[", "(")):
                current[0] += " " + text
                continue
            if current:
                yield pytest.param(current[0], id=current[1])
                current = None
            if _is_command(text):
                current = [text.removeprefix("$ "), f"{doc.name}:{number}"]
        if current:
            yield pytest.param(current[0], id=current[1])


COMMANDS = list(doc_commands())


def _has_gpu(apron) -> bool:
    info = apron.run("info").stdout
    return "cuda" in info and "no device" not in info and "not built" not in info


@pytest.fixture(scope="module")
def scratch(apron, tmp_path_factory) -> Path:
    """The files the docs' commands name, small."""
    import cv2

    d = tmp_path_factory.mktemp("docs")
    sample = cv2.imread(str(REPO_ROOT / "samples" / "sample.png"), cv2.IMREAD_UNCHANGED)
    gray = cv2.cvtColor(sample, cv2.COLOR_BGR2GRAY) if sample.ndim == 3 else sample
    rng = np.random.default_rng(20261126)
    shutil.copy(REPO_ROOT / "samples" / "sample.png", d / "in.png")
    shutil.copy(REPO_ROOT / "samples" / "sample.png", d / "photo.png")
    write_pnm(d / "in.pgm", gray)
    write_pnm(d / "big.pgm", rng.integers(0, 256, (1200, 1000), dtype=np.uint8))
    assert cv2.imwrite(str(d / "in.tif"), sample)
    assert cv2.imwrite(str(d / "in.jpg"), sample, [cv2.IMWRITE_JPEG_QUALITY, 90])
    # A slide is a tiled TIFF: apron writes one when it streams.
    apron.run("filter", d / "in.png", d / "slide.tif", "--op", "box:width=1", "--stream", "on", "--tile", "64")
    (d / "scene.raw").write_bytes(rng.integers(0, 65536, 640 * 480, dtype=np.uint16).astype("<u2").tobytes())
    shutil.copy(REPO_ROOT / "samples" / "masks" / "edge3x3.kernel", d / "edge.kernel")
    shutil.copy(REPO_ROOT / "samples" / "masks" / "random7x5.kernel", d / "m.kernel")
    x = np.arange(-15, 16)
    g = lambda s: np.exp(-(x[:, None] ** 2 + x[None, :] ** 2) / (2 * s * s)) / (2 * np.pi * s * s)
    write_mask(d / "dog31.kernel", g(3.0) - g(5.0))
    # A GenConv job file: count, bits, largest size, padding, then the images.
    (d / "job.txt").write_text("2\n8\n640 480\n0 0\nin.pgm\nin.png\n")
    le = rng.integers(0, 4096, (96, 128), dtype=np.uint16)
    (d / "le.pgm").write_bytes(b"P5\n128 96\n65535\n" + le.astype("<u2").tobytes())
    (d / "genconv.job").write_text("1\n16\n128 96\n0 0\nle.pgm\n")
    (d / "scans").mkdir()
    (d / "raw").mkdir()
    for k in range(2):
        assert cv2.imwrite(str(d / "scans" / f"scan{k}.png"), np.roll(sample, 17 * k, axis=1))
        write_pnm(d / "raw" / f"r{k}.pgm", np.roll(gray, 11 * k, axis=0))
    (d / "list.txt").write_text("in.pgm\n")
    (d / "steps.json").write_text('{"ops": ["gaussian:sigma=2", {"op": "dilate", "se": "ellipse:5x5"}], "out_type": "u8"}\n')
    # FITS (docs/formats.md): an image with a header, and a cube of f32 planes, as astropy writes them.
    from astropy.io import fits

    header = fits.Header({"OBJECT": "sample", "DATE-OBS": "2026-11-26T20:00:00"})
    fits.PrimaryHDU(gray.astype(np.uint16) * 200, header=header).writeto(d / "in.fits")
    fits.PrimaryHDU(rng.random((3, 48, 64), dtype=np.float32)).writeto(d / "cube.fits")
    # Volumes (docs/volumes.md): a multi-page OME-TIFF z-stack and a raw u16 volume (shrunk by SHRINK).
    import tifffile

    tifffile.imwrite(d / "stack.ome.tif", rng.integers(0, 4096, (6, 40, 52), dtype=np.uint16), ome=True,
                     metadata={"axes": "ZYX", "PhysicalSizeZ": 1.0})
    (d / "scan.raw").write_bytes(rng.integers(0, 65536, 64 * 48 * 8, dtype=np.uint16).astype("<u2").tobytes())
    (d / "laplace3d.kernel").write_text("3 3 3\n0 0 0\n0 1 0\n0 0 0\n\n0 1 0\n1 -6 1\n0 1 0\n\n0 0 0\n0 1 0\n0 0 0\n")
    # Band stacks (docs/volumes.md, docs/formats.md): a Sentinel-2-like TIFF of 13 separate u16 bands.
    tifffile.imwrite(d / "s2.tif", rng.integers(0, 10000, (13, 40, 52), dtype=np.uint16), photometric="minisblack",
                     planarconfig="separate", metadata=None)
    return d


def _outputs(words: list[str]) -> list[str]:
    """What a command must leave behind: filter's OUTPUT, batch's -o folder, calibrate's -o table."""
    if "filter" in words:
        args = [w for w in words[words.index("filter") + 1:] if not w.startswith("-")]
        # positionals come first: INPUT OUTPUT
        return [args[1]] if len(args) > 1 else []
    if "-o" in words:
        return [words[words.index("-o") + 1]]
    return []


@pytest.mark.parametrize("text", COMMANDS)
def test_doc_command_runs(apron, scratch, text):
    for piece, reason in NEEDS.items():
        if piece in text and not (piece == "--backend cuda" and _has_gpu(apron)):
            pytest.skip(f"needs {reason}")
    if PLACEHOLDER in text:
        pytest.skip("a variant shown with '--op ...', not a command")
    if _is_synopsis(text):
        sub = text.split()[1]
        apron.run(sub, "--help")  # the subcommand exists
        shown = {w.split("=")[0] for w in re.findall(r"--[a-z][a-z0-9-]*", text)}
        helped = set(re.findall(r"--[a-z][a-z0-9-]*", apron.run(sub, "--help").stdout))
        assert shown <= helped, f"the synopsis names options `apron {sub}` lacks: {sorted(shown - helped)}"
        return
    words = shlex.split(text, comments=True)
    words = [SHRINK.get(w, w) for w in words]
    env = dict(os.environ)
    while re.fullmatch(r"[A-Z_]+=\S+", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words[0] == "mpirun":
        reason = mpi_skip_reason()
        if reason:
            pytest.skip(reason)
        ranks = words.index("-np")
        words[ranks + 1] = "2"
        words.insert(1, "--oversubscribe")
        env = dict(env, **mpi_env())
    words = [str(apron.path) if w == "apron" else (sys.executable if w == "python3" else w) for w in words]
    if words[0] == sys.executable:
        words[1] = str(REPO_ROOT / words[1])
        if "bench/plots.py" in text:
            words += ["-o", str(scratch / "plots")]  # not over the checked-in docs/plots
    r = subprocess.run(words, cwd=scratch, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert r.returncode == 0, f"{text}\nexit {r.returncode}:\n{r.stderr}{r.stdout}"
    for out in _outputs(words):
        assert (scratch / out).exists(), f"{text}: exit 0 but no {out}"


# ---- claims of the prose ------------------------------------------------------------------------------------


def test_readme_png_over_the_budget_is_refused_from_its_header(apron, tmp_path):
    """README, Trust: with --stream off --memory 100M, a 71 KB PNG that decodes to 8000x8000 is refused."""
    import cv2

    src = tmp_path / "big.png"
    assert cv2.imwrite(str(src), np.full((8000, 8000), 128, np.uint8))
    assert src.stat().st_size < 100_000
    r = apron.run("filter", src, tmp_path / "o.png", "--op", "box", "--memory", "100M", "--stream", "off", check=False)
    assert r.returncode != 0
    line = r.stderr.strip()
    assert "\n" not in line and str(src) in line and "memory budget" in line
    assert not (tmp_path / "o.png").exists()
    # Without --stream off the same run streams, and gives the whole-image result.
    apron.run("filter", src, tmp_path / "o.png", "--op", "box", "--memory", "100M")
    assert cv2.imread(str(tmp_path / "o.png"), cv2.IMREAD_UNCHANGED).max() == 128


def test_readme_plan_says_no_estimate_without_a_cost_table(apron):
    """README, Masks of any size: a backend without a cost table prints '(no estimate)' and names none."""
    out = apron.run("plan", "--op", "gaussian:sigma=2", "--size", "64x64", "--type", "u8", "--backend", "cpu").stdout
    if "APRON_CALIBRATION" in os.environ:
        pytest.skip("a cost table is given through APRON_CALIBRATION")
    assert "cost model: none for this backend" in out and "(no estimate)" in out
