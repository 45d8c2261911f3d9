"""The examples of docs/assertions.md run as tests: each ``python`` block that starts with
``# example: NAME.py`` is a test module, its leading ``# file: X`` comment sections the files it
needs, written into a fresh project and run by pytest (every test must pass)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "assertions.md"


def examples() -> List[Tuple[str, str, Dict[str, str]]]:
    """(test module name, its code, the files it needs) of every example on the page."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
        lines = block.splitlines()
        if not lines or not lines[0].startswith("# example: "):
            continue
        name = lines[0][len("# example: "):].strip()
        files: Dict[str, List[str]] = {}
        current = None
        i = 1
        while i < len(lines) and lines[i].startswith("#"):
            if lines[i].startswith("# file: "):
                current = lines[i][len("# file: "):].strip()
                files[current] = []
            elif current is not None:
                files[current].append(re.sub(r"^# ?", "", lines[i]))
            i += 1
        found.append((name, "\n".join(lines[i:]) + "\n", {k: "\n".join(v) + "\n" for k, v in files.items()}))
    return found


def test_the_page_has_an_example_of_each_part_of_the_api() -> None:
    code = "".join(c + "".join(f.values()) for _, c, f in examples())
    for part in ("defan_pytest.score(", "defan_pytest.assert_answer(", "@defan_pytest.cases(", "defan_evaluate("):
        assert part in code, part


@pytest.mark.parametrize("name, code, files", examples(), ids=[e[0] for e in examples()])
def test_the_example_runs(pytester: pytest.Pytester, name: str, code: str, files: Dict[str, str]) -> None:
    for file, text in files.items():
        (pytester.path / file).write_text(text, encoding="utf-8")
    (pytester.path / name).write_text(code, encoding="utf-8")
    result = pytester.runpytest_subprocess(name, "-p", "no:randomly", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.lines[-30:]
    assert result.parseoutcomes().get("passed", 0) >= 1
