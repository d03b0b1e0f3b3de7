"""The checked-in type stubs (python/apron/__init__.pyi) are those python/gen_stubs.py writes from the
registry: a new operation or parameter fails here until the stubs are regenerated."""
import ast
import subprocess
import sys

import apron
from conftest import REPO_ROOT

STUB = REPO_ROOT / "python" / "apron" / "__init__.pyi"


def test_stubs_are_current():
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, str(REPO_ROOT / "python" / "gen_stubs.py"), "--check"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr + r.stdout


def test_stubs_declare_every_operation():
    tree = ast.parse(STUB.read_text())
    declared = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for op in apron.operations():
        assert op["name"].replace("-", "_") in declared
