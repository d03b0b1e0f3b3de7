"""The checked-in operation list is what the registry says (docs/operations.md is generated)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_operations_md_is_up_to_date(apron):
    generated = apron.run("ops", "--markdown").stdout
    checked_in = (ROOT / "docs" / "operations.md").read_text()
    assert generated == checked_in, "docs/operations.md is stale: run `apron ops --markdown > docs/operations.md`"


def test_every_operation_is_in_the_readme(apron):
    readme = (ROOT / "README.md").read_text()
    names = [line.split()[0] for line in apron.run("ops").stdout.splitlines() if line and not line.startswith(" ")]
    assert names
    for name in names:
        assert f"`{name}`" in readme, f"README's operation table lacks {name}"
