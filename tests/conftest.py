"""Shared test setup: the loopback server helper is importable as ``openai_server``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
# litellm must never fetch its price table over the network in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
