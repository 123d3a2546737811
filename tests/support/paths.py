"""Where the repository's parts lie, for tests in any folder."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SUBMISSIONS = TESTS / "submissions"
CORPUS = TESTS / "corpus"
REFERENCE = ROOT / "solutions" / "attention" / "attention.py"
STUBS = ROOT / "exercises" / "attention" / "attention.py"
RELEASE = ROOT / "release" / "attention"
