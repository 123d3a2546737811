"""The feedback page's Content-Security-Policy as docs/instructors say it: a literal, never the code's constant,
so a change to the policy in the code turns the tests that compare with it red."""

DOCUMENTED_POLICY = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
                     "base-uri 'none'; form-action 'none'")
