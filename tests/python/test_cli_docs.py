"""The man page and the shell completions that `apron` prints from its own CLI and operation registry.

Completion is tested the way bash runs it: the script is sourced in a real bash, COMP_LINE and COMP_POINT
are set as bash sets them for a Tab press at the end of the line, and COMPREPLY is read back.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import REPO_ROOT


def operation_names(apron) -> list[str]:
    return [line.split()[0] for line in apron.run("ops").stdout.splitlines() if line and not line.startswith(" ")]


def complete(apron, line: str, cwd=None) -> list[str]:
    script = apron.run("completion", "bash").stdout
    probe = (
        script
        + '\nCOMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=($COMP_LINE); COMP_CWORD=${#COMP_WORDS[@]}\n'
        + '_apron\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    r = subprocess.run(["bash", "-c", probe, "probe", line], capture_output=True, text=True, timeout=30, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return sorted(x for x in r.stdout.splitlines() if x)


def test_commands_and_options(apron):
    assert complete(apron, "apron fi") == ["filter"]
    assert "batch" in complete(apron, "apron ")
    assert complete(apron, "apron filter in.png out.png --back") == ["--backend"]
    assert complete(apron, "apron batch jobs.txt --stre") == ["--streams"]


def test_option_values(apron):
    assert complete(apron, "apron filter in.png out.png --backend c") == ["cpu", "cuda"]
    assert complete(apron, "apron filter in.png out.png --out-type u") == ["u16", "u8"]
    assert complete(apron, "apron filter in.png out.png --compression z") == ["zstd"]
    assert complete(apron, "apron completion ") == ["bash", "zsh"]
    assert complete(apron, "apron filter in.png out.png --memory ") == []  # a size: nothing to offer


def test_operation_names_and_parameters(apron):
    names = operation_names(apron)
    assert len(names) >= 20
    got = complete(apron, "apron filter in.png out.png --op ")
    assert set(names) <= set(got)
    assert complete(apron, "apron filter in.png out.png --op gaussi") == ["gaussian", "gaussian:"]
    # bash splits the word at ':' and '=': the replies are what follows the last of them.
    assert "sigma=" in complete(apron, "apron filter in.png out.png --op gaussian:")
    assert complete(apron, "apron filter in.png out.png --op gaussian:sig") == ["sigma=", "sigma_y=", "sigma_z="]
    assert complete(apron, "apron filter in.png out.png --op gaussian:sigma=2,bord") == ["2,border="]
    assert complete(apron, "apron filter in.png out.png --op gaussian:sigma=2,border=wr") == ["wrap"]
    assert complete(apron, "apron filter a b --op dilate:se=di") == ["disk:"]
    assert complete(apron, "apron filter a b --op erode:se=disk:3,border=ig") == ["ignore"]


def test_files_where_files_go(apron, tmp_path):
    (tmp_path / "slide.tif").write_bytes(b"")
    (tmp_path / "frames").mkdir()
    assert complete(apron, "apron filter sl", cwd=tmp_path) == ["slide.tif"]
    assert complete(apron, "apron batch x -o fr", cwd=tmp_path) == ["frames"]
    assert "slide.tif" in complete(apron, "apron filter a b --op correlate:mask=sl", cwd=tmp_path)


def test_every_parameter_of_every_operation_completes(apron):
    listing = apron.run("ops").stdout
    for name in operation_names(apron):
        params = []
        block = listing.split(f"\n{name}  (", 1)[-1] if not listing.startswith(f"{name}  (") else listing
        for line in block.splitlines()[2:]:
            if not line.startswith("    "):
                break
            params.append(line.split()[0].split("=")[0])
        got = complete(apron, f"apron filter a b --op {name}:")
        assert sorted(p + "=" for p in params) == got, name


def test_man_page_names_every_command_option_and_operation(apron):
    page = apron.run("man-page").stdout
    assert page.startswith('.\\"') and "\n.TH APRON 1 " in page
    for command in ("filter", "batch", "plan", "calibrate", "ops", "info", "completion"):
        assert f'.SS "apron {command}"' in page
    for option in ("memory", "resume", "io\\-threads", "out\\-type", "stream"):
        assert f"\\fB\\-\\-{option}\\fR" in page
    for name in operation_names(apron):
        assert "\\fB" + name.replace("-", "\\-") + "\\fR" in page, name


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings(apron, tmp_path):
    page = tmp_path / "apron.1"
    page.write_text(apron.run("man-page").stdout)
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_parses(apron, tmp_path):
    script = tmp_path / "_apron"
    script.write_text(apron.run("completion", "zsh").stdout)
    r = subprocess.run(["zsh", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_zsh_completion_lists_every_operation(apron):
    script = apron.run("completion", "zsh").stdout
    assert script.startswith("#compdef apron")
    for name in operation_names(apron):
        assert f"'{name}:" in script


def test_unknown_shell_is_one_line(apron):
    r = apron.run("completion", "fish", check=False)
    assert r.returncode == 1 and r.stderr.strip() == "apron: completion: unknown shell 'fish' (use bash or zsh)"


def test_install_puts_the_page_and_the_scripts_where_man_and_the_shells_look(apron, tmp_path):
    build = apron.path.parent.parent
    if not (build / "tools" / "apron.1").is_file() or not (build / "CMakeCache.txt").is_file():
        pytest.skip("the binary is not in a CMake build tree")
    r = subprocess.run(["cmake", "--install", str(build), "--prefix", str(tmp_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    page = tmp_path / "share" / "man" / "man1" / "apron.1"
    assert page.read_text() == apron.run("man-page").stdout
    assert (tmp_path / "share" / "bash-completion" / "completions" / "apron").read_text() == apron.run("completion", "bash").stdout
    assert (tmp_path / "share" / "zsh" / "site-functions" / "_apron").read_text() == apron.run("completion", "zsh").stdout
    if shutil.which("man"):
        shown = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, timeout=60,
                               env={"MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin"})
        if shown.returncode == 0 and "minimized" not in shown.stdout + shown.stderr:
            assert "apron filter" in shown.stdout
