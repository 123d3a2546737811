"""What the tests share: paths, fixture headers, capability checks, the rules-off switches, the session's
report folder, and the builders of notebooks, courses and LMS exports. Tests import these from here;
conftest.py holds only fixtures and hooks."""
