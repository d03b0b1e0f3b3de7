"""Pipeline, op objects, plan(), describe(), batch() through include/apron/batch.hpp."""
import numpy as np
import pytest

import apron
from apron_cli_references import assert_equal_images, random_image, read_image, write_image


def test_pipeline_equals_the_functions_in_turn():
    img = random_image((17, 19, 3), np.uint8, seed=50)
    p = apron.Pipeline(["gaussian:sigma=1.5", apron.op("dilate", se="ellipse:5x3"), ("sobel", {"dx": 1})])
    expected = apron.sobel(apron.dilate(apron.gaussian(img, 1.5), se="ellipse:5x3"), dx=1)
    assert_equal_images(p.run(img), expected)
    assert_equal_images(p(img), expected)
    assert p.specs == ["gaussian:sigma=1.5", "dilate:se=ellipse:5x3", "sobel"]  # defaults left out
    out = np.empty((17, 19, 3), np.float32)
    assert p.run(img, out=out) is out


def test_pipeline_with_numpy_mask_op():
    img = random_image((10, 12), np.float32, seed=51)
    m = np.array([[0, 1, 0], [2, -3, 1.5]])
    p = apron.Pipeline([apron.op("correlate", mask=m, border="wrap")])
    assert "mask=<array 2x3>" in p.specs[0]
    assert_equal_images(p.run(img), apron.correlate(img, m, border="wrap"))


def test_plan_and_describe_name_each_step():
    text = apron.plan(["gaussian:sigma=2", "dilate:se=disk:3"], ((256, 256), np.uint8))
    assert "gaussian" in text and "dilate" in text
    img = random_image((64, 48), np.float32, seed=52)
    short = apron.Pipeline(["box:width=5"]).describe(img)
    assert "box" in short
    assert apron.Pipeline(["box:width=5"]).memory_needed(img) > 64 * 48 * 4
    with pytest.raises(ValueError, match="shape"):
        apron.plan(["box"], ((5,), np.uint8))


def _images(directory, n):
    directory.mkdir()
    imgs = []
    for k in range(n):
        img = random_image((11 + k, 13), np.uint8, seed=60 + k)
        write_image(directory / f"im{k}.pgm", img)
        imgs.append(img)
    return imgs


def test_batch_over_a_directory(tmp_path):
    imgs = _images(tmp_path / "in", 3)
    report = apron.batch(tmp_path / "in", tmp_path / "out", ["gaussian:sigma=1", "dilate"], progress=False)
    assert (report["done"], report["failed"], report["total"]) == (3, 0, 3)
    for k, img in enumerate(imgs):
        assert_equal_images(read_image(tmp_path / "out" / f"im{k}.pgm"), apron.dilate(apron.gaussian(img, 1.0)))
    again = apron.batch(str(tmp_path / "in"), str(tmp_path / "out"), "gaussian:sigma=1,border=wrap", resume=False,
                        name="{stem}-b.{ext}", format="pfm", out_type="f32", progress=False)
    assert again["done"] == 3
    assert read_image(tmp_path / "out" / "im0-b.pfm").dtype == np.float32


def test_batch_reports_failures_and_refuses_bad_runs(tmp_path):
    _images(tmp_path / "in", 2)
    (tmp_path / "in" / "bad.pgm").write_bytes(b"P5\n3 3\n255\nxx")
    r = apron.batch(str(tmp_path / "in" / "*.pgm"), tmp_path / "out", ["box"], progress=False)
    assert r["done"] == 2 and r["failed"] == 1 and "bad.pgm" in r["failures"][0][0]
    with pytest.raises(ValueError, match="format"):
        apron.batch(tmp_path / "in", tmp_path / "o2", ["box"], format="gif", progress=False)
    with pytest.raises(ValueError, match="no inputs"):
        apron.batch([], tmp_path / "o3", ["box"])
    with pytest.raises(ValueError, match="inputs_as"):
        apron.batch(tmp_path / "in", tmp_path / "o4", ["box"], inputs_as="zip")
    with pytest.raises(ValueError, match="metadata"):
        apron.batch(tmp_path / "in", tmp_path / "o5", ["box"], metadata="drop")


def test_mask_files_are_read_at_each_call_not_cached(tmp_path):
    img = random_image((8, 9), np.float32, seed=53)
    path = tmp_path / "m.kernel"
    path.write_text("1 1\n2\n")
    assert_equal_images(apron.correlate(img, str(path)), img * 2)
    path.write_text("1 1\n3\n")
    assert_equal_images(apron.correlate(img, str(path)), img * 3)
    assert_equal_images(apron.Pipeline([f"correlate:mask={path}"]).run(img), img * 3)
    se = tmp_path / "e.se"
    se.write_text("3 1\n1 1 1\n")
    a = apron.dilate(img, se=str(se))
    se.write_text("1 1\n1\n")
    assert_equal_images(apron.dilate(img, se=str(se)), img)
    assert not np.array_equal(a, img)


def test_warm_function_calls_tell_int_from_float():
    img = random_image((8, 9), np.uint8, seed=54)
    apron.box(img, width=3)
    with pytest.raises(ValueError, match="not an integer"):
        apron.box(img, width=3.0)


def test_batch_output_directory_that_cannot_be_made_is_an_os_error(tmp_path):
    _images(tmp_path / "in", 1)
    (tmp_path / "afile").write_text("")
    with pytest.raises(OSError, match="cannot create the output directory"):
        apron.batch(tmp_path / "in", tmp_path / "afile" / "sub", ["box"], progress=False)


def test_batch_progress_bar_on_request(tmp_path, capfd):
    _images(tmp_path / "in", 2)
    apron.batch(tmp_path / "in", tmp_path / "out", ["box"], progress=True)
    assert capfd.readouterr().err  # the CLI's bar, drawn on stderr
    apron.batch(tmp_path / "in", tmp_path / "out2", ["box"], progress=False)
    assert capfd.readouterr().err == ""


def test_batch_resume_redoes_outputs_when_a_mask_array_changes(tmp_path):
    """The resume fingerprint holds the weights of every mask (the CLI's and apron.batch()'s are one): the same
    op text with another NumPy mask, or another output option, redoes every output; the same job skips."""
    imgs = _images(tmp_path / "in", 2)
    identity = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], np.float64)
    right = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]], np.float64)

    def run(mask, **kw):
        op = apron.op("correlate", mask=mask, border="nearest")
        return apron.batch(tmp_path / "in", tmp_path / "out", [op], resume=True, progress=False, **kw)

    assert run(identity)["done"] == 2
    assert (run(identity)["skipped"], run(identity)["done"]) == (2, 0)
    again = run(right)
    assert (again["done"], again["skipped"]) == (2, 0), again
    for k, img in enumerate(imgs):
        want = np.concatenate([img[:, 1:], img[:, -1:]], axis=1)
        assert_equal_images(read_image(tmp_path / "out" / f"im{k}.pgm"), want, f"im{k}")
    assert run(right, backend="cpu")["done"] == 2  # another backend: float results may differ in last bits


def test_batch_carries_or_strips_each_inputs_metadata(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    (tmp_path / "in").mkdir()
    im = Image.fromarray(random_image((9, 12, 3), np.uint8, seed=70))
    exif = im.getexif()
    exif[0x0112] = 6  # Orientation: turned a quarter
    im.save(tmp_path / "in" / "photo.png", exif=exif)
    for metadata, expected in (("keep", 6), ("strip", None)):
        r = apron.batch(tmp_path / "in", tmp_path / metadata, ["box"], format="jpg", metadata=metadata, progress=False)
        assert r["done"] == 1
        with Image.open(tmp_path / metadata / "photo.jpg") as out:
            assert out.getexif().get(0x0112) == expected, metadata
    r = apron.batch(tmp_path / "in", tmp_path / "upright", ["dilate:se=rect:1x1"], format="png", auto_orient=True,
                    progress=False)
    assert r["done"] == 1
    with Image.open(tmp_path / "upright" / "photo.png") as out:
        assert out.getexif().get(0x0112) == 1
        np.testing.assert_array_equal(np.asarray(out), np.rot90(random_image((9, 12, 3), np.uint8, seed=70), k=-1))
