"""The judge: the process that runs the worker's graphs, and nothing else.

Three parties grade a hand-in. The worker (grader.sandbox) runs the student's code and reports what it did as
graphs; the judge, a process of its own that never ran student code, decodes those graphs and runs them on the
parent's inputs; the parent (grader.checks) only compares the judge's numbers with the reference and reports.
A graph is hostile data: whatever it does to the process that runs it (a crash, memory or CPU exhausted, a
wait) ends the judge, never the parent, and costs that hand-in's part (`submission-too-costly`).

- `confinement`: what the judge adds to the worker's confinement (a CPU-time limit, no sockets);
- `serve`: the judge's side, which answers the parent's requests one graph at a time;
- `process`: the parent's side, one judge per grading forked like a worker, its failures told apart.
"""
