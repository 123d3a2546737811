"""The rule by which a file's name says whose it is: `<student_id>_<any name>`, as nbgrader's zip_collect reads
a Colab download (an id of letters, digits, `-` and `.`, starting with a letter or a digit).

grade-all's folders, the nbgrader collector and the LMS names read it here. It imports nothing else, so a
`grade-all` over a plain folder never imports nbgrader (about a second of CPU per process)."""
import re

STUDENT_ID = re.compile(r"^(?P<student_id>[^\W_](?:[^\W_]|[.\-])*)_(?P<name>.+)$")
