"""The gallery (docs/gallery.md, made by scripts/make_gallery.py) shows what apron does today: the command
under each thumbnail is run again and must reproduce the checked-in thumbnail, and every operation of the
registry has a place in it."""
import re
import shlex
import sys

import pytest

pytest.importorskip("cv2")

from conftest import REPO_ROOT, assert_equal_images  # noqa: E402

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import make_gallery  # noqa: E402  the thumbnail rule and how a shown command runs: one definition for both

GALLERY_MD = REPO_ROOT / "docs" / "gallery.md"
# A cell: a thumbnail, then in a code span the command that made it (or the file it shows).
CELL = re.compile(r"!\[[^\]]*\]\(gallery/([\w.-]+\.png)\)<br>`([^`]+)`")
CELLS = CELL.findall(GALLERY_MD.read_text()) if GALLERY_MD.is_file() else []


@pytest.mark.no_apron_binary
def test_gallery_shows_every_thumbnail_file():
    assert CELLS, f"no thumbnail found in {GALLERY_MD}"
    shown = [name for name, _ in CELLS]
    assert len(shown) == len(set(shown)), f"a thumbnail is shown twice: {sorted(shown)}"
    files = sorted(p.name for p in make_gallery.THUMBS.glob("*.png"))
    assert sorted(shown) == files, "docs/gallery/ and gallery.md disagree: run scripts/make_gallery.py"


@pytest.mark.parametrize("name,caption", CELLS, ids=[name for name, _ in CELLS])
def test_thumbnail_is_reproduced(apron, tmp_path, name, caption):
    words = shlex.split(caption)
    source = make_gallery.run_shown(words, str(apron.path), tmp_path) if words[0] == "apron" else REPO_ROOT / caption
    expected = make_gallery.read_thumbnail(make_gallery.THUMBS / name)
    assert expected is not None, f"cannot read docs/gallery/{name}"
    assert_equal_images(make_gallery.thumbnail(source), expected, f"docs/gallery/{name} (`{caption}`); "
                        "if the change is intended, run scripts/make_gallery.py", max_diff=make_gallery.TOLERANCE)


def test_every_operation_is_in_the_gallery(apron):
    names = [line.split()[0] for line in apron.run("ops").stdout.splitlines() if line and not line.startswith(" ")]
    assert names
    shown = set()
    for _, caption in CELLS:
        words = shlex.split(caption)
        shown |= {spec.split(":")[0] for flag, spec in zip(words, words[1:]) if flag == "--op"}
    missing = [n for n in names if n not in shown]
    assert not missing, f"gallery.md shows no {missing}: add them to GALLERY in scripts/make_gallery.py"
