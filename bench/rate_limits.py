"""A hosted API's rate limits kept (issue 35 point 3): the call pool against the loopback server
enforcing requests and tokens a minute (``tests/openai_server.py``: token buckets of ``--window``
seconds' worth, 429 with Retry-After beyond them, x-ratelimit-* headers on every answer).

    python bench/rate_limits.py [--prompts 300] [--rpm 600] [--tpm 60000] [--words 20] [--window 5]

``--words``: the answer's length (the server counts a token a word): 20 makes the requests bind,
200 the tokens.  Printed: prompts lost (target 0), 429s per request (target < 2%), and the
throughput against the binding limit, raw and without the first burst the buckets allow
(``--window`` seconds' worth; target >= 90%).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from defan_pytest.calls.backends import make_caller  # noqa: E402
from defan_pytest.calls.models import LitellmModel  # noqa: E402
from defan_pytest.calls.pool import CallPool  # noqa: E402
from defan_pytest.calls.protocol import Prompt  # noqa: E402
from openai_server import OpenAIServer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--rpm", type=float, default=600)
    ap.add_argument("--tpm", type=float, default=60000)
    ap.add_argument("--words", type=int, default=20)
    ap.add_argument("--window", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=64)
    a = ap.parse_args()
    answers = {f"How many moons does planet {i} have?": "It has about " + " ".join(["moons"] * a.words)
               for i in range(a.prompts)}
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with OpenAIServer(answers=answers, rpm=a.rpm, tpm=a.tpm, window=a.window, log_requests=False, latency=0.05) as srv:
        model = LitellmModel("t", "openai/test-model", {"api_base": srv.base_url, "api_key": "sk-bench"})
        pool = CallPool(make_caller(model, timeout=30, path="openai"), concurrency=a.concurrency, adaptive=True)
        began = time.monotonic()
        pool.start([Prompt(q, q) for q in answers])
        pool.join()
        wall = time.monotonic() - began
        lost = sum(1 for q in answers if pool.result(q).error is not None)
        core = srv._core
        admitted, refused = core.admitted, core.refused
        pool.close()
    tokens = sum(t for _, t in admitted)
    per_request = tokens / max(1, len(admitted))
    binding = min(a.rpm, a.tpm / per_request)  # requests a minute the limits allow
    burst = binding * a.window / 60.0
    rate = len(admitted) / wall * 60.0
    steady = max(0.0, len(admitted) - burst) / wall * 60.0
    print(f"{a.prompts} prompts, {a.rpm:,.0f} requests and {a.tpm:,.0f} tokens a minute ({per_request:.0f} tokens a "
          f"request: {'tokens' if a.tpm / per_request < a.rpm else 'requests'} bind, {binding:,.0f} requests a minute)")
    print(f"  lost {lost} (target 0); 429s {refused} of {refused + len(admitted)} requests = "
          f"{refused / max(1, refused + len(admitted)):.1%} (target < 2%)")
    print(f"  throughput {rate:,.0f} requests a minute = {rate / binding:.2f}x the limit; without the first burst "
          f"({burst:.0f} requests) {steady / binding:.2f}x (target >= 0.90); wall {wall:.1f} s")
    print(f"  {pool.asker.rates.summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
