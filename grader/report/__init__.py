"""The verdict as data (json_report), as text (text), its catalog of mistakes and its cache."""
