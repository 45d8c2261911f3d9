"""The package as an index would get it: ``python -m build`` makes a wheel and an sdist that
pass ``twine check --strict``, with the metadata an index shows, and with nothing but the
package in them (no tests, no example, no benchmarks, no data files).

The build runs on a copy of the project in a temporary folder (the checkout is left alone) and
without build isolation (no download: the test extras install setuptools, wheel, build, twine).
"""
from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two builds and twine

ROOT = Path(__file__).resolve().parents[1]
#: What the build reads; the rest is there to prove it stays out.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")
STAY_OUT = {
    "tests/test_something.py": "def test_x():\n    pass\n",
    "tests/data/rows.csv": "questions,answer,type\n",
    "tests/data/rows.jsonl": "{}\n",
    "examples/my_rag/__init__.py": "",
    "examples/my_rag/knowledge/facts.md": "# Facts\n",
    "bench/speed.py": "",
    "conftest.py": "",
    "thresholds.toml": "[defaults]\nmax_fch = 0.9\n",
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module in ("build", "twine", "setuptools", "wheel"):
        if shutil.which(module) is None and not _importable(module):
            pytest.fail(f"{module} is not installed: pip install -e '.[test]'")
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "defan_pytest", src / "defan_pytest", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name, text in STAY_OUT.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_wheel_and_sdist_pass_twine_check(dist: Path) -> None:
    files = sorted(p.name for p in dist.iterdir())
    assert len(files) == 2 and any(f.endswith(".tar.gz") for f in files), files
    assert any(f.endswith("-py3-none-any.whl") for f in files), files
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *(str(p) for p in sorted(dist.iterdir()))],
        capture_output=True, text=True, timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_wheel_holds_the_package_only(dist: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"defan_pytest", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert not [n for n in names if n.endswith((".csv", ".jsonl", ".md", ".toml")) or "/tests/" in n or "examples" in n]
    assert {"defan_pytest/plugin/__init__.py", "defan_pytest/py.typed", "defan_pytest/dataset/public.py", "defan_pytest/report/report.schema.json"} <= set(names)
    # The HTML report's page, style and script are package data.
    assert {f"defan_pytest/report/html/report.{ext}" for ext in ("html", "css", "js")} <= set(names)
    info = wheel.name.split("-py3")[0] + ".dist-info"
    entry_points = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    assert "[pytest11]\ndefan = defan_pytest.plugin" in entry_points
    assert "defan = defan_pytest.cli:main" in entry_points


def test_metadata_ready_for_an_index(dist: Path) -> None:
    wheel = next(dist.glob("*.whl"))
    info = wheel.name.split("-py3")[0] + ".dist-info"
    meta = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{info}/METADATA"))
    classifiers = meta.get_all("Classifier") or []
    assert "Framework :: Pytest" in classifiers
    assert "License :: OSI Approved :: MIT License" in classifiers
    assert meta["Name"] == "defan-pytest" and meta["Requires-Python"] == ">=3.10"
    assert "pytest" in (meta["Keywords"] or "") and "hallucination" in (meta["Keywords"] or "")
    assert any("github.com/ashikiut/DefAn" in url for url in meta.get_all("Project-URL") or [])
    assert meta["Description-Content-Type"] == "text/markdown"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    extras = meta.get_all("Provides-Extra") or []
    assert {"test", "examples"} <= set(extras)


def test_sdist_holds_the_package_and_its_metadata(dist: Path) -> None:
    sdist = next(dist.glob("*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    tops = {n.split("/", 1)[0] for n in names}
    assert {"defan_pytest", "pyproject.toml", "README.md", "LICENSE", "PKG-INFO"} <= tops
    assert not tops & {"tests", "examples", "bench", "conftest.py", "thresholds.toml"}, tops
    assert {f"defan_pytest/report/html/report.{ext}" for ext in ("html", "css", "js")} <= set(names)
    assert "defan_pytest/report/report.schema.json" in names
