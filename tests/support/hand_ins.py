"""Reading the fixture hand-ins of tests/submissions: their `# key: value` headers, and an order of a test module's own;
and writing a variant of the reference solution."""
import hashlib
from pathlib import Path


def header(path: Path, key: str) -> str | None:
    """`# key: value` from the first lines of a fixture submission."""
    for line in path.read_text(encoding="utf-8").splitlines()[:8]:
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def own_order(paths: list[Path], module: str) -> list[Path]:
    """`paths` in an order of the test module's own. Files that grade every submission through the session's
    cache claim each report while computing it; walked in one shared order, two of them on two xdist workers
    ran in lockstep, one computing and the other waiting on the same report (graders and gradescope: 130 s
    and 169 s for one set of reports). In orders that differ, each mostly finds the other's reports done."""
    return sorted(paths, key=lambda p: hashlib.sha256(f"{module}/{p.parent.name}/{p.name}".encode()).hexdigest())


def edited(base: Path, folder: Path, name: str, old: str, new: str) -> Path:
    """The hand-in `base` with `old` (found once) replaced by `new`, written as `folder/name.py`."""
    source = base.read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    path = folder / f"{name}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    return path


def reference_edited(folder: Path, name: str, old: str, new: str) -> Path:
    """The reference solution with `old` (found once) replaced by `new`, written as `folder/name.py`."""
    from support.paths import REFERENCE

    return edited(REFERENCE, folder, name, old, new)
