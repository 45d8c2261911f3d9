"""pytest hooks for defan-pytest (filled in by the plugin issue)."""
from __future__ import annotations
