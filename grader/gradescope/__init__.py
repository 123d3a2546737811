"""The hidden graders as a Gradescope autograder.

`build` writes autograder.zip (setup.sh, run_autograder, the kit's grader); `results` turns a report into
Gradescope's results.json; `run` grades /autograder/submission and writes /autograder/results/results.json.
"""
