"""What the learning-management systems hand an instructor, and what they take back.

`names` reads who handed in a file, and when, from the names each LMS export gives its files (`blackboard`
reads Blackboard's against its receipts);
`roster` maps an LMS's own people (Canvas user ids, Moodle participants) to the course's student
ids and back; `grade_sheets` writes the CSV layouts the LMS gradebook imports accept, into the assignment's own column. Pure: no
nbgrader, no torch. The nbgrader plugins in grader/nbgrader (lms_collector, lms_export, lms_feedback) use them.
"""
