"""The isolation layer: student code runs only in a confined worker process; the parent sends it
typed probe requests and reads back bounded, plain-data answers.

Parent side: `worker_process` (fork server, one `Worker` per submission), `requests` (the typed,
validated probe requests). Worker side: `worker` (loads the submission, answers requests),
`probes` (what each request runs). Confinement of the worker: `confinement`, `syscall_filter`,
`worker_identity`. The answer channel: `frames` (framing under deadlines), then `answers`
(decoding, bounded by `stored_zip` and `answer_pickle`).

Importing this package loads nothing: the CLI starts the fork server before it imports torch.
"""
