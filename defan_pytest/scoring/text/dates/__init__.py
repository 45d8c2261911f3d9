"""Dates in text: month names of every language, written forms, CLDR date patterns, years (SCORING.md clarifications 8, 16 and 17)."""
