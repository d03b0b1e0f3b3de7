"""Every error path of the Python API: the registry's one-line errors as ValueError (with its text), files as
OSError, the memory budget as MemoryError, types as TypeError."""
import numpy as np
import pytest

import apron
from apron_cli_references import random_image

IMG = random_image((9, 8), np.uint8, seed=40)


@pytest.mark.parametrize("call,match", [
    (lambda: apron.gaussian(IMG, 0), r"^gaussian\(\): sigma: 0 is out of range \(must be > 0 and <= 682\)$"),
    (lambda: apron.gaussian(IMG, 700), "sigma: 700 is out of range"),
    (lambda: apron.box(IMG, width=5000), "width: 5000 is out of range"),
    (lambda: apron.box(IMG, width=2.5), "width: '2.5' is not an integer"),
    (lambda: apron.box(IMG, border="sideways"), "border: unknown border mode 'sideways'"),
    (lambda: apron.correlate(IMG, np.ones((3, 3)), normalize="half"), "normalize: unknown normalisation 'half'"),
    (lambda: apron.laplacian(IMG, neighbours=6), "neighbours: '6' is not one of 4, 8"),
    (lambda: apron.dilate(IMG, se="blob:3"), "unknown shape 'blob'"),
    (lambda: apron.dilate(IMG, se="disk:3000"), "se:"),
    (lambda: apron.dilate(IMG, se=np.array([[0, 2], [1, 0]])), "<array 2x2>: structuring element weights must be 0 or 1"),
    (lambda: apron.dilate(IMG, se=np.zeros((3, 3))), "structuring element has no cell set to 1"),
    (lambda: apron.correlate(IMG, np.array([[1, np.nan]])), "mask: weight at row 0, column 1 is not finite"),
    (lambda: apron.correlate(IMG, np.ones((2, 2, 2, 2))), "a mask array must be 2-D"),
    (lambda: apron.correlate(IMG, np.ones((0, 3))), "each side must be 1..4097"),
    (lambda: apron.separable(IMG, "1::2"), "row: number 2 of '1::2' is empty"),
    (lambda: apron.box(IMG, scale=float("inf")), "scale:"),
    (lambda: apron.box(IMG, border="wrap,width=3"), "contains ','"),
    (lambda: apron.box(IMG, backend="quantum"), "backend: unknown backend 'quantum'"),
    (lambda: apron.box(IMG, algorithm="magic"), "algorithm: unknown algorithm 'magic'"),
    (lambda: apron.box(IMG, threads=-1), r"^box\(\): threads: -1 is out of range"),
    (lambda: apron.box(IMG, algorithm="tensor", backend="cpu"), "algo"),
    (lambda: apron.Pipeline([]), "no operations"),
    (lambda: apron.Pipeline(["nosuchop"]), "unknown operation 'nosuchop'"),
    (lambda: apron.Pipeline(["box:width=3,width=4"]), "given twice"),
    (lambda: apron.op("nosuchop"), "unknown operation 'nosuchop'"),
    (lambda: apron.box(IMG, memory_budget="lots"), "memory_budget"),
])
def test_value_errors_carry_the_registry_message(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cuda_backend_missing_is_a_value_error():
    if "cuda" in apron.info()["backends"]:
        pytest.skip("this machine has the CUDA backend")
    with pytest.raises(ValueError, match="cuda"):
        apron.box(IMG, backend="cuda")


@pytest.mark.parametrize("call,match", [
    (lambda: apron.box(IMG, widht=3), "unexpected keyword argument 'widht'"),
    (lambda: apron.box(IMG, width=True), "width: a bool"),
    (lambda: apron.box(IMG, width=[3]), "width: list"),
    (lambda: apron.Pipeline([42]), "is not an operation"),
    (lambda: apron.op("box", dpeth=2), "unexpected keyword argument 'dpeth'"),
    (lambda: apron.box(IMG, memory_budget=-5), "memory_budget"),
])
def test_type_errors(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_missing_mask_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="cannot open"):
        apron.correlate(IMG, str(tmp_path / "missing.kernel"))
    with pytest.raises(OSError, match="is a directory"):
        apron.correlate(IMG, str(tmp_path))


def test_memory_budget_is_a_memory_error():
    with pytest.raises(MemoryError, match="over the memory budget"):
        apron.gaussian(random_image((300, 300), np.float32, seed=41), 2.0, memory_budget=1000)
    with pytest.raises(MemoryError, match="over the memory budget"):
        apron.gaussian(random_image((300, 300), np.float32, seed=41), 2.0, memory_budget="1K")


def test_errors_are_one_line():
    with pytest.raises(ValueError) as e:
        apron.gaussian(IMG, -1)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("call,error,match", [
    (lambda: apron.box(IMG, threads=1.5), TypeError, r"^box\(\): threads: 1\.5 is not an integer$"),
    (lambda: apron.box(IMG, threads="2"), TypeError, r"^box\(\): threads: '2' is not an integer$"),
    (lambda: apron.box(IMG, threads=2**40), ValueError, r"^box\(\): threads: 1099511627776 is out of range"),
    (lambda: apron.box(IMG, memory_budget=2**64), ValueError, r"^box\(\): memory_budget: 18446744073709551616 bytes is over"),
    (lambda: apron.box(IMG, backend=3), TypeError, r"^box\(\): backend: 3 is not a name"),
    (lambda: apron.box(IMG, algorithm=None), TypeError, r"^box\(\): algorithm: None is not a name"),
    (lambda: apron.Pipeline("box").describe(((4, 2**31), np.uint8)), ValueError, r"^shape: width: 2147483648 is out of range"),
    (lambda: apron.Pipeline("box").memory_needed(((2.5, 4), np.uint8)), TypeError, r"^shape: height: 2\.5 is not an integer"),
    (lambda: apron.box(np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(1, 2**31), strides=(0, 1))),
     ValueError, r"^box\(\): img: width 2147483648 .* is over apron's limit"),
    (lambda: apron.batch([], "out", "box", threads=0.5), ValueError, "batch: no inputs"),
    (lambda: apron.batch(["x.png"], "out", "box", io_threads=0.5), TypeError, r"^io_threads: 0\.5 is not an integer$"),
])
def test_out_of_range_arguments_name_the_parameter_in_one_line(call, error, match):
    """Values the binding's C types cannot hold are refused naming the parameter, not with nanobind's
    'incompatible function arguments' listing of every overload."""
    with pytest.raises(error, match=match) as e:
        call()
    assert "\n" not in str(e.value) and "incompatible function arguments" not in str(e.value)


def test_errors_speak_python_not_the_command_line():
    """The core's messages name the CLI's options ("--op gaussian:sigma=0: ...", "raise it with --memory");
    through Python they name the function and its keywords (apron._ops.python_message)."""
    big = random_image((300, 300), np.float32, seed=41)
    cases = [
        (lambda: apron.gaussian(IMG, 0), ValueError, r"^gaussian\(\): sigma: 0 is out of range"),
        (lambda: apron.xf_lowpass(IMG, alpha=0), ValueError, r"^xf_lowpass\(\): alpha: "),
        (lambda: apron.gaussian(big, 2.0, memory_budget=1000), MemoryError,
         r"^gaussian\(\): .*over the memory budget of 1000 bytes \(raise it with memory_budget=\)$"),
        (lambda: apron.Pipeline("gaussian:sigma=2").run(big, memory_budget="1K"), MemoryError,
         r"raise it with memory_budget=\)$"),
        (lambda: apron.Pipeline(["box", "gaussian:sigma=0"]), ValueError, r"^gaussian:sigma=0: sigma: 0 is out of range"),
        (lambda: apron.Pipeline(["nosuchop"]), ValueError, r"^nosuchop: unknown operation 'nosuchop' \(apron\.operations\(\) lists them\)$"),
        (lambda: apron.box(IMG, threads=-1), ValueError, r"^box\(\): threads: -1 is out of range"),
        (lambda: apron.box(IMG, algorithm="low-rank"), ValueError, r"^box\(\): algorithm: low-rank cannot run"),
        (lambda: apron.dilate(IMG, se=np.array([[0, 2], [1, 0]])), ValueError, r"^dilate\(\): se: "),
        (lambda: apron.dilate(IMG, 0), ValueError, r"^dilate\(\): se: 0 is not a square's side"),
        (lambda: apron.box(IMG, width=True), TypeError, r"^box\(\): width: a bool"),
        (lambda: apron.box(IMG.astype(np.float64)), TypeError, r"^box\(\): img: dtype float64 is not supported"),
        (lambda: apron.Pipeline("box").describe(((4, 4), np.uint8), backend="quantum"), ValueError, r"^backend: unknown backend"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match) as e:
            call()
        text = str(e.value)
        assert "--op" not in text and "--memory" not in text and "--threads" not in text and "--algo" not in text, text
        assert "\n" not in text


def test_python_message_rules():
    from apron._ops import python_message

    assert python_message("--op box:width=0: width: 0 is out of range", ["box:width=0"], "box") == \
        "box(): width: 0 is out of range"
    assert python_message("--op box:width=0: width: 0 is out of range", ["box:width=0"]) == \
        "box:width=0: width: 0 is out of range"
    assert python_message("pipeline: needs 2 GiB, over the memory budget of 1 GiB (raise it with --memory)") == \
        "pipeline: needs 2 GiB, over the memory budget of 1 GiB (raise it with memory_budget=)"
    assert python_message("--threads: 9999 is out of range") == "threads: 9999 is out of range"
    assert python_message("--memory: a band of 8 rows ... (raise --memory)") == \
        "memory_budget: a band of 8 rows ... (raise memory_budget=)"
    assert python_message("--backend cuda: this build has no CUDA backend") == "backend cuda: this build has no CUDA backend"
    assert python_message("sobel: negative results saturate: use --out-type f32") == \
        "sobel: negative results saturate: use out_type='f32'"
    assert python_message("a path/with--memory-in-it: cannot open") == "a path/with--memory-in-it: cannot open"
