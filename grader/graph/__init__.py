"""The parent's side of grading from graphs: a worker's graph read as hostile data (`decode`), its
operators judged (`ops`), run on the parent's own inputs (`run`, `devices`), and turned into the
answers the checks read (`answers`). No student code runs in this package."""
