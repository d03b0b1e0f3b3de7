"""The cluster recipe (docs/cluster.md, scripts/slurm/*.sbatch), as far as one machine can check it.

- The sbatch scripts are valid bash (`bash -n`) and carry #SBATCH lines.
- Every apron option that the scripts and docs/cluster.md show (fenced lines, `srun ... apron ...` lines and
  inline commands, which tests/python/test_doc_commands.py does not run) is an option of that subcommand's
  --help.
- Where mpirun exists and apron has MPI: each script, run with `mpirun -np 2` as its launcher (LAUNCH) on small
  generated images on the CPU backend, writes the same bytes as with one rank, the batch's manifests list every
  output once with its CRC-32, and the script's own check refuses a run whose rank count is not the expected
  one. Slurm itself (srun, sbatch, several nodes) is not available here; docs/cluster.md says what is not tested.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, RUN_TIMEOUT_S, mpi_env, mpi_skip_reason, random_image, write_pnm

SCRIPTS = sorted((REPO_ROOT / "scripts" / "slurm").glob("*.sbatch"))
DOC = REPO_ROOT / "docs" / "cluster.md"
SUBCOMMANDS = ("batch", "filter")


@pytest.mark.no_apron_binary
def test_the_scripts_exist():
    assert [p.name for p in SCRIPTS] == ["batch.sbatch", "stream.sbatch"]


@pytest.mark.no_apron_binary
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash_with_sbatch_lines(script):
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"bash -n {script.name}:\n{r.stderr}"
    text = script.read_text()
    assert text.startswith("#!/bin/bash\n")
    directives = [line for line in text.splitlines() if line.startswith("#SBATCH ")]
    assert any("--ntasks-per-node" in d for d in directives), directives
    assert any("--gpus-per-task" in d or "--gpus-per-node" in d for d in directives), directives
    # #SBATCH lines are read only before the first command.
    first_command = next(n for n, line in enumerate(text.splitlines()) if line and not line.startswith("#"))
    assert all(n < first_command for n, line in enumerate(text.splitlines()) if line.startswith("#SBATCH"))
    assert "--mpi=pmix" in text and "--resume" in text


# ---- every apron option shown exists -------------------------------------------------------------------------


def _options_after_subcommand(text: str) -> list[tuple[str, set[str]]]:
    """(subcommand, its --options) of every `apron SUB ...` (or `"$APRON" SUB ...`) in a line of text."""
    found = []
    for m in re.finditer(r'(?:\bapron|"\$APRON")\s+(batch|filter)\b(.*)', text):
        rest = m.group(2).split(" # ")[0]  # a trailing comment is prose
        found.append((m.group(1), {o.split("=")[0] for o in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)}))
    return found


def _doc_command_texts() -> list[str]:
    """Fenced lines and inline code spans of docs/cluster.md that call apron batch or apron filter."""
    texts, inside = [], False
    for line in DOC.read_text().splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if inside:
            texts.append(line)
        else:
            texts += re.findall(r"`([^`]*\bapron (?:batch|filter)\b[^`]*)`", line)
    return [t for t in texts if re.search(r"\bapron (batch|filter)\b", t)]


def _script_command_texts(script: Path) -> list[str]:
    """The apron line of a script, and its OPS/EXTRA defaults and examples (given to that subcommand)."""
    text = script.read_text()
    sub = re.search(r'"\$APRON" (batch|filter)', text).group(1)
    texts = [line for line in text.splitlines() if '"$APRON"' in line]
    for line in text.splitlines():
        if re.match(r"(OPS|EXTRA)=", line) or re.match(r"# More apron \w+ options", line):
            texts.append(f"apron {sub} " + line.lstrip("# ").replace(":-", ": "))
    return texts


def _help_options(apron, sub: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z0-9-]*", apron.run(sub, "--help").stdout))


def test_every_apron_option_shown_exists(apron):
    helped = {sub: _help_options(apron, sub) for sub in SUBCOMMANDS}
    texts = _doc_command_texts() + [t for s in SCRIPTS for t in _script_command_texts(s)]
    checked = 0
    for text in texts:
        for sub, shown in _options_after_subcommand(text):
            missing = shown - helped[sub]
            assert not missing, f"`apron {sub} --help` lacks {sorted(missing)}, shown in: {text.strip()}"
            checked += 1
    assert checked >= 10, f"only {checked} apron commands found in docs/cluster.md and the scripts"


@pytest.mark.no_apron_binary
def test_doc_names_the_scripts_and_the_measurement_table():
    doc = DOC.read_text()
    for script in SCRIPTS:
        assert f"scripts/slurm/{script.name}" in doc
    table = doc.split("## Measured on one node", 1)[1]
    assert "| workload | 1 GPU | 2 GPUs | 4 GPUs | 2 ranks | 4 ranks |" in table


# ---- the scripts under mpirun, on one machine -----------------------------------------------------------------

MPI_SKIP = mpi_skip_reason()


def run_script(apron, script: str, tmp_path: Path, ranks: int | None, expect: int | None = None, **variables):
    """Runs scripts/slurm/SCRIPT with mpirun -np RANKS as its launcher (None: no launcher, one process)."""
    env = {k: v for k, v in mpi_env().items() if not k.startswith("SLURM_")}
    env.update(APRON=str(apron.path), MEMORY="512M")
    env["LAUNCH"] = "" if ranks is None else f"mpirun --oversubscribe -np {ranks}"
    env["EXPECT_RANKS"] = str(expect if expect is not None else ranks or 1)
    env.update(variables)
    return subprocess.run(["bash", str(REPO_ROOT / "scripts" / "slurm" / script)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=4 * RUN_TIMEOUT_S)


def manifest_entries(out: Path) -> list[tuple[str, int, str]]:
    entries = []
    for manifest in sorted((out / ".apron-batch").glob("manifest-*.tsv")):
        for line in manifest.read_text().splitlines():
            if line and not line.startswith("#"):
                name, size, crc = line.split("\t")[:3]
                entries.append((name, int(size), crc))
    return sorted(entries)


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_batch_recipe_two_ranks_write_the_bytes_of_one(apron, tmp_path):
    names = ["a.pgm", "b.pgm", "c.pgm"]
    (tmp_path / "in").mkdir()
    for k, name in enumerate(names):
        write_pnm(tmp_path / "in" / name, random_image((50 + 9 * k, 70 - 5 * k), np.uint16, seed=700 + k))
    common = dict(INPUTS="in", OPS="--op gaussian:sigma=2 --op dilate:se=rect:3x3", EXTRA="--backend cpu --threads 1")
    runs = {}
    for label, ranks in (("plain", None), ("one", 1), ("two", 2)):
        r = run_script(apron, "batch.sbatch", tmp_path, ranks, OUT=label, **common)
        assert r.returncode == 0, f"batch.sbatch with {ranks} ranks: exit {r.returncode}\n{r.stdout}{r.stderr}"
        runs[label] = r
    assert "; 2 ranks" in runs["two"].stdout, runs["two"].stdout
    for name in names:
        one = (tmp_path / "one" / name).read_bytes()
        assert (tmp_path / "plain" / name).read_bytes() == one, name
        assert (tmp_path / "two" / name).read_bytes() == one, f"{name}: 2 ranks differ from 1"
    # The manifests of the 2-rank run (one per rank) list every output once, with the CRC of its bytes, and
    # the same (name, size, CRC) as the 1-rank run's: the check docs/cluster.md gives for runs on other machines.
    assert sorted(p.name for p in (tmp_path / "two" / ".apron-batch").glob("manifest-*.tsv")) == [
        "manifest-0.tsv", "manifest-1.tsv"]
    entries = manifest_entries(tmp_path / "two")
    assert [e[0] for e in entries] == names
    for name, size, crc in entries:
        data = (tmp_path / "two" / name).read_bytes()
        assert (size, crc) == (len(data), f"{zlib.crc32(data):08x}"), name
    assert entries == manifest_entries(tmp_path / "one")
    # Submitted again (a requeued job): --resume skips everything.
    r = run_script(apron, "batch.sbatch", tmp_path, 2, OUT="two", **common)
    assert r.returncode == 0 and "0 of 3 images done, 3 skipped" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_batch_recipe_refuses_a_world_of_the_wrong_size(apron, tmp_path):
    """Tasks that did not join one world (srun without PMIx) print summaries without the expected count."""
    (tmp_path / "in").mkdir()
    write_pnm(tmp_path / "in" / "a.pgm", random_image((20, 30), np.uint8, seed=710))
    r = run_script(apron, "batch.sbatch", tmp_path, 2, expect=3, INPUTS="in", OUT="out", OPS="--op box:width=3",
                   EXTRA="--backend cpu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "did not form one MPI world" in r.stderr and "docs/cluster.md" in r.stderr, r.stderr


@pytest.mark.skipif(MPI_SKIP is not None, reason=MPI_SKIP or "")
def test_stream_recipe_two_ranks_write_the_bytes_of_one(apron, tmp_path):
    write_pnm(tmp_path / "in.pgm", random_image((300, 170), np.uint16, seed=720))
    ops = "--op gaussian:sigma=3 --op dilate:se=disk:2"
    for label, ranks in (("one", 1), ("two", 2)):
        for ext in ("pgm", "tif"):
            extra = "--backend cpu --threads 1 --band-rows 32" + (" --tile 16" if ext == "tif" else "")
            r = run_script(apron, "stream.sbatch", tmp_path, ranks, INPUT="in.pgm", OUTPUT=f"{label}.{ext}", OPS=ops,
                           EXTRA=extra)
            assert r.returncode == 0, f"stream.sbatch with {ranks} ranks: exit {r.returncode}\n{r.stdout}{r.stderr}"
            if ranks == 2:
                assert "bands of 2 ranks'" in r.stdout, r.stdout
    apron.run("filter", tmp_path / "in.pgm", tmp_path / "whole.pgm", *shlex.split(ops), "--backend", "cpu",
              "--stream", "off")
    assert (tmp_path / "two.pgm").read_bytes() == (tmp_path / "one.pgm").read_bytes() == (tmp_path / "whole.pgm").read_bytes()
    assert (tmp_path / "two.tif").read_bytes() == (tmp_path / "one.tif").read_bytes()
    assert not [p.name for p in tmp_path.iterdir() if ".apron-" in p.name]  # no partial file, journal or lock left


def test_tasks_that_are_not_one_mpi_job_are_refused(apron, tmp_path):
    """srun -n N without an MPI plugin starts N worlds of one: each would do the whole job. apron refuses,
    naming the launcher's variable, before it touches the output."""
    write_pnm(tmp_path / "in.pgm", random_image((9, 7), np.uint8, seed=2900))
    env = dict(os.environ, SLURM_STEP_NUM_TASKS="4")
    exe = str(apron.path)
    for cmd in ([exe, "batch", "in.pgm", "-o", "out", "--op", "box"], [exe, "filter", "in.pgm", "out.pgm", "--op", "box"]):
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert r.returncode == 1, r.stderr
        assert r.stderr.startswith("apron: launched as one of 4 tasks (SLURM_STEP_NUM_TASKS=4), but MPI sees "), r.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path / "out.pgm").exists()
    env["SLURM_STEP_NUM_TASKS"] = "1"  # one task: nothing to say
    r = subprocess.run([exe, "filter", "in.pgm", "out.pgm", "--op", "box"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=RUN_TIMEOUT_S)
    assert r.returncode == 0, r.stderr
