#!/usr/bin/env python3
"""Generates apron's gallery: docs/gallery.md and its thumbnails docs/gallery/*.png. Every operation of the
registry (`apron ops`) is applied to samples/sample.png, plus 16-bit and float results where they show what
8 bits cannot; each thumbnail has the exact command under it. tests/python/test_gallery.py runs those
commands again and compares the thumbnails, so the gallery cannot go stale.

    python3 scripts/make_gallery.py [--apron build/tools/apron] [--check]

--check writes nothing: it regenerates into a temporary directory and exits non-zero naming every file that
differs from the checked-in one. Needs numpy and OpenCV (cv2); the commands run on the CPU backend.
"""
from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "samples/sample.png"
DOCS = ROOT / "docs"
THUMBS = DOCS / "gallery"
MAX_SIDE = 256  # thumbnails' longest side
COLUMNS = 3  # thumbnails per table row
# Thumbnails may differ by 1 per sample value: float paths may round differently on other CPU instruction sets.
TOLERANCE = 1


class Shot(NamedTuple):
    stem: str  # the thumbnail is docs/gallery/STEM.png
    spec: str  # the --op argument
    out_type: str | None = None  # --out-type, if any


# Each operation of the registry with the results the gallery shows; an operation missing here stops the
# script, so a new one cannot be forgotten. Parameters are chosen to be visible at a third of the size.
GALLERY = {
    "correlate": [Shot("correlate", "correlate:mask=samples/masks/edge3x3.kernel,delta=128")],
    "convolve": [Shot("convolve", "convolve:mask=samples/masks/even4x4.kernel,normalize=sum")],
    "separable": [Shot("separable", "separable:row=1:2:1,column=-1:0:1,delta=128")],
    "gaussian": [Shot("gaussian", "gaussian:sigma=3"),
                 # scale=257 spreads 0..255 over 0..65535: the blur's fractions survive in 16 bits.
                 Shot("gaussian-u16", "gaussian:sigma=3,scale=257", "u16")],
    "box": [Shot("box", "box:width=15,height=5")],
    "sharpen": [Shot("sharpen", "sharpen:strength=2")],
    "unsharp": [Shot("unsharp", "unsharp:sigma=2,amount=2")],
    "emboss": [Shot("emboss", "emboss")],
    # On u8 negative results saturate to 0; f32 keeps them.
    "laplacian": [Shot("laplacian", "laplacian"), Shot("laplacian-f32", "laplacian", "f32")],
    "sobel": [Shot("sobel", "sobel:dx=1"), Shot("sobel-f32", "sobel:dx=1", "f32")],
    "scharr": [Shot("scharr", "scharr:dx=0,dy=1,scale=0.125,delta=128")],
    "prewitt": [Shot("prewitt", "prewitt:dx=1,delta=128")],
    "dilate": [Shot("dilate", "dilate:se=disk:4")],
    "erode": [Shot("erode", "erode:se=samples/masks/diamond5x5.se,iterations=2")],
    "open": [Shot("open", "open:se=ellipse:9x9")],
    "close": [Shot("close", "close:se=ellipse:9x9")],
    "gradient": [Shot("gradient", "gradient")],
    "tophat": [Shot("tophat", "tophat:se=rect:15x15")],
    "blackhat": [Shot("blackhat", "blackhat:se=rect:15x15")],
    # Rank filters: a median removes specks and keeps edges; a high percentile is a gentler dilation.
    "median": [Shot("median", "median:se=disk:5")],
    "percentile": [Shot("percentile", "percentile:p=90,se=rect:9x9,border=nearest")],
    "rank": [Shot("rank", "rank:r=1,se=cross:9x9")],
    "xf-sharpen": [Shot("xf-sharpen", "xf-sharpen")],
    "xf-highpass": [Shot("xf-highpass", "xf-highpass")],
    "xf-lowpass": [Shot("xf-lowpass", "xf-lowpass")],
    "xf-gaussian": [Shot("xf-gaussian", "xf-gaussian")],
    "xf-dgaussian": [Shot("xf-dgaussian", "xf-dgaussian")],
}

THUMBNAIL_RULE = (
    "Thumbnails average blocks of {f} x {f} pixels. u8 results are shown as they are, u16 results divided by "
    "257, f32 results as 128 + value / 2 (zero is mid-grey), each clipped to 0..255 before averaging."
)


def registry(apron: str) -> list[tuple[str, str]]:
    """(name, category) of every operation, in the registry's order: `apron ops` starts each operation with
    'NAME  (CATEGORY)  summary' at column 0."""
    text = run([apron, "ops"]).stdout
    ops = [m.groups() for m in re.finditer(r"^(\S+)\s+\((\S+)\)", text, re.MULTILINE)]
    if not ops:
        sys.exit(f"make_gallery: no operation found in `{apron} ops`:\n{text}")
    return ops


def run(argv: list[str]) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed with exit {r.returncode}:\n{r.stderr}{r.stdout}")
    return r


def command(shot: Shot) -> list[str]:
    """The command as the gallery shows it."""
    out = "out.pfm" if shot.out_type == "f32" else "out.png"
    words = ["apron", "filter", SAMPLE, out, "--op", shot.spec]
    return words + ["--out-type", shot.out_type] if shot.out_type else words


def run_shown(words: list[str], apron: str, out_dir: Path) -> Path:
    """Runs a command as the gallery shows it, with the binary `apron`, its output in `out_dir` and the CPU
    backend (the same results on every machine); returns the output file."""
    if words[:3] != ["apron", "filter", SAMPLE] or len(words) < 4:
        raise ValueError(f"not a gallery command: {shlex.join(words)}")
    out = out_dir / Path(words[3]).name
    run([apron, "filter", SAMPLE, str(out), *words[4:], "--backend", "cpu"])
    return out


def factor(shape) -> int:
    """The smallest integer block side that brings the longest side down to MAX_SIDE."""
    return -(-max(shape[:2]) // MAX_SIDE)


def thumbnail(path: Path) -> np.ndarray:
    """The image at `path` mapped to u8 (THUMBNAIL_RULE) and box-averaged over factor x factor blocks (the
    remainder rows and columns dropped), rounded half to even."""
    a = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if a is None:
        raise RuntimeError(f"cannot read {path}")
    if a.dtype == np.uint16:
        v = a / 257.0
    elif a.dtype == np.float32:
        v = 128.0 + a.astype(np.float64) / 2.0
    else:
        v = a.astype(np.float64)
    v = np.clip(v, 0.0, 255.0)
    f = factor(a.shape)
    h, w = a.shape[0] // f, a.shape[1] // f
    blocks = v[: h * f, : w * f].reshape(h, f, w, f, *a.shape[2:])
    return np.rint(blocks.mean(axis=(1, 3))).astype(np.uint8)


def read_thumbnail(path: Path) -> np.ndarray | None:
    return cv2.imread(str(path), cv2.IMREAD_UNCHANGED) if path.is_file() else None


def differs(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None or a.shape != b.shape:
        return True
    return bool((np.abs(a.astype(np.int16) - b.astype(np.int16)) > TOLERANCE).any())


def shots_by_category(ops: list[tuple[str, str]]) -> dict[str, list[Shot]]:
    missing = [name for name, _ in ops if name not in GALLERY]
    unknown = sorted(set(GALLERY) - {name for name, _ in ops})
    if missing or unknown:
        sys.exit(f"make_gallery: operations without a gallery entry: {missing}; entries of no operation: "
                 f"{unknown} (edit GALLERY in {Path(__file__).name})")
    groups: dict[str, list[Shot]] = {}
    for name, category in ops:
        groups.setdefault(category, []).extend(GALLERY[name])
    return groups


def cell(stem: str, caption: str) -> str:
    return f"![{stem}](gallery/{stem}.png)<br>{caption}"


def table(cells: list[str]) -> list[str]:
    """A Markdown table with an empty header, COLUMNS cells a row."""
    lines = ["|" + " |" * COLUMNS, "|" + "---|" * COLUMNS]
    for i in range(0, len(cells), COLUMNS):
        row = cells[i : i + COLUMNS]
        lines.append("| " + " | ".join(row + [""] * (COLUMNS - len(row))) + " |")
    return lines


def markdown(groups: dict[str, list[Shot]], sample_shape) -> str:
    h, w = sample_shape[:2]
    lines = [
        "# apron gallery",
        "",
        "Generated by `python3 scripts/make_gallery.py [--apron PATH]` (PATH: the apron binary, default "
        "build/tools/apron) and checked by tests/python/test_gallery.py, which runs every command below again. "
        f"The commands read the bundled sample ({w} x {h} RGB, u8); the thumbnails were made on the CPU backend "
        "(the commands with `--backend cpu`). " + THUMBNAIL_RULE.format(f=factor(sample_shape)),
        "",
        *table([cell("sample", f"`{SAMPLE}`")]),
    ]
    for category, shots in groups.items():
        lines += ["", f"## {category}", "", *table([cell(s.stem, f"`{shlex.join(command(s))}`") for s in shots])]
    return "\n".join(lines) + "\n"


def generate(apron: str, tmp: Path) -> tuple[str, Path]:
    """Runs every command of the gallery; returns gallery.md's text and the folder of the thumbnails."""
    groups = shots_by_category(registry(apron))
    thumbs = tmp / "gallery"
    thumbs.mkdir()
    write_png(thumbs / "sample.png", thumbnail(ROOT / SAMPLE))
    for shots in groups.values():
        for shot in shots:
            result = run_shown(command(shot), apron, tmp)
            write_png(thumbs / f"{shot.stem}.png", thumbnail(result))
            result.unlink()
    return markdown(groups, cv2.imread(str(ROOT / SAMPLE), cv2.IMREAD_UNCHANGED).shape), thumbs


def write_png(path: Path, a: np.ndarray):
    if not cv2.imwrite(str(path), a, [cv2.IMWRITE_PNG_COMPRESSION, 9]):
        raise RuntimeError(f"cannot write {path}")


def stale(text: str, thumbs: Path) -> list[str]:
    """The checked-in files that differ from a fresh run (`text`, `thumbs`), missing or left over."""
    md = DOCS / "gallery.md"
    found = [] if md.is_file() and md.read_text() == text else ["docs/gallery.md"]
    names = sorted({p.name for p in thumbs.glob("*.png")} | {p.name for p in THUMBS.glob("*.png")})
    return found + [f"docs/gallery/{n}" for n in names
                    if differs(read_thumbnail(thumbs / n), read_thumbnail(THUMBS / n))]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--apron", default=str(ROOT / "build" / "tools" / "apron"), help="the apron binary")
    p.add_argument("--check", action="store_true", help="compare with the checked-in gallery instead of writing")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        text, thumbs = generate(str(Path(args.apron).resolve()), Path(tmp))
        if args.check:
            found = stale(text, thumbs)
            for path in found:
                print(f"make_gallery --check: {path} differs from a fresh run", file=sys.stderr)
            return 1 if found else 0
        # Written only once every command has run; thumbnails of removed entries must not linger.
        shutil.rmtree(THUMBS, ignore_errors=True)
        shutil.copytree(thumbs, THUMBS)
        (DOCS / "gallery.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
