"""`python -m grader grade-all DIR`: grade a whole class, in parallel, each submission isolated.

Submissions are graded `--jobs` at a time, each job a process forked from this one (`parallel`; one job
is a thread of this process); each submission runs in its own confined worker forked from the one fork
server that imported torch once (grader.sandbox), which every job shares, so a submission costs a fork,
not an interpreter and a torch import. Every
verdict is computed in the trusted parent (a job), from seeded inputs, so results do not depend on
`--jobs` or on the order submissions finish in. Every submission gets a row, whatever it does,
even when the grader itself fails on it (the row then carries an `error`).

Two modes (`verb.main` picks one):

- `grade-all DIR` (`folder`): DIR holds one `.ipynb` or `.py` per student, in `DIR/<student>/...`
  or directly in DIR (`discovery`). Prints a table, then a class summary (`text`); `--json OUT`
  writes the reports as a JSON list (`json_list`).
- `grade-all COURSE --nbgrader ASSIGNMENT` (`course`): COURSE is an nbgrader course directory (the
  repo root for the instructor). The notebooks in `submitted/*/ASSIGNMENT/` go through nbgrader's
  own sanitize pass (grader.nbgrader.course, the course's configuration, read-only), are graded in
  parallel into the report cache (grader.report.cache) in `autograded/.attention-kit-report-cache/`,
  then ONE `nbgrader autograde ASSIGNMENT` runs (grader.nbgrader.autograde_run): its grading step
  finds every verdict in the cache, so the gradebook has a single writer (no SQLite races) and
  takes seconds, and nbgrader's feedback works as usual. `--db-url` points both at a shared
  gradebook (PostgreSQL) and `--shard K/N` takes one disjoint share of the students, for a class
  graded by several machines.

Only `options` is imported to build the CLI's parser: it loads neither torch nor nbgrader.
"""
