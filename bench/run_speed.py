"""Per-item cost of a full warm run: pytest's standard protocol against the old lean one and
against trivial parametrized tests.

    python bench/run_speed.py [--data FOLDER] [--repeat 3]

All 70,793 public prompts are answered by a registered callable (synthetic responses, version
pinned, so a first, unmeasured run fills the response cache and the measured runs are warm).
Three sessions, each the best of ``--repeat`` wall times, with the same plugins switched off:

* ``standard``: defan-pytest as shipped (setup, call and teardown reports per prompt);
* ``lean``: the same with a conftest.py that restores the one-report protocol defan-pytest
  used before (call phase only), the baseline the standard protocol is compared with;
* ``trivial``: ``@pytest.mark.parametrize`` over 70,793 cases with an empty body.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import measure  # noqa: E402

MODEL = f'''
import sys
sys.path.insert(0, {str(HERE)!r})
import defan_pytest
from defan_pytest import dataset
from synthetic import respond

_ROWS = {{}}
for r in dataset.load_public():
    _ROWS.setdefault(r.question, r)

@defan_pytest.model("synth", version="1")
def synth(prompt):
    r = _ROWS[prompt]
    return respond(r.id, r.question, r.answer, r.type)
'''
LEAN = '''
import pytest
from defan_pytest.plugin.items import PromptItem

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not isinstance(item, PromptItem):
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    call = pytest.CallInfo.from_call(item.runtest, when="call", reraise=(pytest.exit.Exception, KeyboardInterrupt))
    ihook.pytest_runtest_logreport(report=ihook.pytest_runtest_makereport(item=item, call=call))
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
'''
# Plugins the test extras install that would add their own per-item cost to every session.
OFF = ["rerunfailures", "randomly", "sugar", "cov", "html", "allure_pytest", "json-report", "split", "timeout",
       "pytest_github_actions_annotate_failures", "cacheprovider"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None,
                    help="folder of the public split (default: found as users find it: DEFAN_DATA_DIR, the cache, the pinned download)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.data is None:
        sys.path.insert(0, str(HERE.parent))
        from defan_pytest.dataset import resolve_public_dir

        args.data = str(resolve_public_dir())
    sys.path.insert(0, str(HERE.parent))
    from defan_pytest.dataset import load_public

    n = len(load_public(data_dir=args.data))
    env = dict(os.environ, DEFAN_DATA_DIR=str(Path(args.data).resolve()), PYTHONDONTWRITEBYTECODE="1",
               PYTEST_ADDOPTS="")
    off = [x for name in OFF for x in ("-p", f"no:{name}")]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        sessions = {}
        for name, conftest in (("standard", MODEL), ("lean", MODEL + LEAN)):
            folder = Path(tmp) / name
            folder.mkdir()
            (folder / "conftest.py").write_text(conftest)
            (folder / "pytest.ini").write_text("[pytest]\n")
            sessions[name] = folder
        trivial = Path(tmp) / "trivial"
        trivial.mkdir()
        (trivial / "pytest.ini").write_text("[pytest]\n")
        (trivial / "test_plain.py").write_text(
            f"import pytest\n@pytest.mark.parametrize('i', range({n}))\ndef test_case(i):\n    pass\n"
        )
        ours = ["-q", *off, "--defan-model=synth", f"--defan-cache={cache}", "--defan-spacy-model=none"]
        measure(ours, sessions["standard"], env, 1)  # fills the cache: the measured runs are warm
        results = {}
        for _ in range(args.repeat):  # interleaved, so that machine noise hits all three alike
            for name in ("standard", "lean"):
                t, rss, _ = measure(ours, sessions[name], env, 1)
                best = results.get(name, (float("inf"), 0.0))
                results[name] = (min(best[0], t), max(best[1], rss))
            t, rss, _ = measure(["-q", *off], trivial, env, 1)
            best = results.get("trivial", (float("inf"), 0.0))
            results["trivial"] = (min(best[0], t), max(best[1], rss))
    print(f"items                                 {n:,} (warm cache, best of {args.repeat})")
    for name in ("standard", "lean", "trivial"):
        t, rss = results[name]
        print(f"{name:8s}  {t:7.2f} s  {t / n * 1e6:6.0f} us/item  peak RSS {rss:6.0f} MiB")
    s, lean, triv = results["standard"][0], results["lean"][0], results["trivial"][0]
    print(f"standard / lean      {s / lean:5.2f}x")
    print(f"standard / trivial   {s / triv:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
