"""Text, number and date primitives every answer type shares."""
