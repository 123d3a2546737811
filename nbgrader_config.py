"""nbgrader configuration: the repository root is the course directory.

Instructors run every nbgrader command from here (`nbgrader autograde attention`, ...).
`make build` records the `attention` assignment (its graded cells and hidden tests) in
`gradebook.db` beside this file, as `nbgrader generate_assignment` does; `submitted/`,
`autograded/`, `feedback/`, `downloaded/` and `gradebook.db` are git-ignored.
"""
import os

c = get_config()  # noqa: F821  (injected by traitlets when nbgrader loads this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "attention-kit"

# What replaces each `### BEGIN SOLUTION` ... `### END SOLUTION` region in the student notebook.
c.ClearSolutions.code_stub = {"python": "# 你的代码 / YOUR CODE HERE\nraise NotImplementedError()"}
