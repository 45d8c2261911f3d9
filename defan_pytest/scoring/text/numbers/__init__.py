"""Numbers in text: digits of every script, separators, scale and number words (SCORING.md clarifications 4, 5, 15, 16)."""
