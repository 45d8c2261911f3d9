"""Scoring: a response becomes a claim, an alignment and a correctness verdict (SCORING.md)."""
