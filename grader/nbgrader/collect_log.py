"""nbgrader's own zip_collect lines about the files a collector reported, at the collector's level.

nbgrader's ZipCollectApp warns of every file its collector returns nothing for ("Skipped submission with no match
information provided"), counts them in a warning ("N files collected, M files skipped"), and warns of each folder it
creates for a student. The kit's collector (grader.nbgrader.collector) has already said why each such file is not
collected, at its own level (an LMS receipt at INFO, a stranger's file as a WARNING): nbgrader's lines about those
files read as INFO, so that a WARNING is what needs the instructor. A file the collector never saw keeps nbgrader's
WARNING.
"""
from __future__ import annotations

import logging

_SKIPPED = "Skipped submission with no match information provided: "
_SUMMARY = " files skipped"
_CREATING = "Directory not found. Creating: "


class NbgraderLinesAtTheCollectorsLevel(logging.Filter):
    """nbgrader warns of every file a collector returns nothing for, and counts them; the collector has reported each
    at its own level already (a receipt at INFO), so those lines of nbgrader's read at INFO too, as does its warning
    for each folder it creates (`submitted/<student>/…`: what collecting is)."""

    def __init__(self, collector):
        super().__init__()
        self.collector = collector

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage() if record.levelno == logging.WARNING else ""
        reported = (message.startswith(_SKIPPED) and message[len(_SKIPPED):] in self.collector.reported
                    or message.endswith(_SUMMARY) and not self.collector.unplanned
                    or message.startswith(_CREATING))
        if reported:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True
