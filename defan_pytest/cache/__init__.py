"""The answer cache (SQLite) and the coordination of xdist workers through it."""
