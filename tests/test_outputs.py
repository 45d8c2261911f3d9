"""The one writer of every output (defan_pytest.report.writer): nothing lost, nothing half-written,
nothing hangs.  Each rule is tested through write_output with a report's JSON, as every format writes."""
from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.report import writer
from defan_pytest.report.writer import OutputError, append_output, check_output, is_report, write_output


def write_json(path: Any, report: Any, **kw: Any) -> Path:
    """``report`` written as the JSON report format writes it (indented UTF-8), by the one writer."""
    return write_output(path, json.dumps(report, ensure_ascii=False, indent=1) + "\n", **kw)


REPORT = {"rows": [{"id": "a"}], "domains": {}, "overall": {}}


def _no_temp_files(folder: Path) -> bool:
    return not [p for p in os.listdir(folder) if p.endswith(".tmp")]


# --- what is never replaced ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["conftest.py", "test_x.py", "pyproject.toml", "thresholds.toml", "tox.ini",
                                  "setup.cfg", "data.csv", "answers.jsonl"])
def test_a_source_or_data_file_is_never_replaced_even_forced(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    target.write_text("keep me\n", encoding="utf-8")
    for force in (False, True):
        with pytest.raises(OutputError, match="not a report; a report never replaces one"):
            check_output(target, force=force)
        with pytest.raises(OutputError):
            write_json(target, REPORT, force=force)
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert _no_temp_files(tmp_path)


def test_an_input_of_the_run_is_never_replaced_even_forced(tmp_path: Path) -> None:
    data = tmp_path / "my-set.json"  # a .json data set: only its being an input protects it
    data.write_text("[]", encoding="utf-8")
    link = tmp_path / "out.json"
    link.symlink_to(data)
    for path in (data, link):
        with pytest.raises(OutputError, match="would overwrite the dataset"):
            write_json(path, REPORT, inputs=[("the dataset", data)], force=True)
    assert data.read_text(encoding="utf-8") == "[]"


def test_an_existing_file_that_is_not_a_report_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "notes.json"
    target.write_text('{"mine": true}', encoding="utf-8")
    with pytest.raises(OutputError, match="exists and is not a defan report; choose another name or pass --x"):
        check_output(target, force_hint="--x")
    with pytest.raises(OutputError, match="exists and is not a defan report"):
        write_json(target, REPORT)
    assert target.read_text(encoding="utf-8") == '{"mine": true}'
    write_json(target, REPORT, force=True)
    assert json.loads(target.read_text(encoding="utf-8")) == REPORT


def test_an_earlier_report_or_an_empty_file_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json(target, {"rows": [], "domains": {}, "overall": {}, "model": "m", "gate": []})
    assert is_report(target)
    write_json(target, REPORT)  # the plugin's report, then defan score's: both are ours
    assert json.loads(target.read_text(encoding="utf-8")) == REPORT
    empty = tmp_path / "empty.json"
    empty.touch()  # nothing in it to lose (mktemp)
    write_json(empty, REPORT)
    assert json.loads(empty.read_text(encoding="utf-8")) == REPORT


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json(target, REPORT)
    target.chmod(0o640)
    write_json(target, REPORT)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


# --- links, FIFOs and devices ----------------------------------------------------------------------


def test_a_symlink_is_followed_not_replaced(tmp_path: Path) -> None:
    real_dir = tmp_path / "reports"
    real_dir.mkdir()
    real = real_dir / "latest.json"
    write_json(real, {"rows": [], "domains": {}, "overall": {}})
    link = tmp_path / "report.json"
    link.symlink_to(real)
    assert write_json(link, REPORT) == real
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text(encoding="utf-8")) == REPORT
    assert _no_temp_files(tmp_path) and _no_temp_files(real_dir)


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "new.json")
    write_json(link, REPORT)
    assert link.is_symlink() and json.loads((tmp_path / "new.json").read_text(encoding="utf-8")) == REPORT


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_json(fifo, REPORT)
    reader.join(10)
    assert json.loads(got[0]) == REPORT
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO: not replaced by a file


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "FIFO_WAIT", 0.2)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_output(fifo)  # writable: a reader may come
    with pytest.raises(OutputError, match="no process is reading this FIFO"):
        write_json(fifo, REPORT)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_is_written_not_replaced() -> None:
    before = os.stat("/dev/null")
    write_json("/dev/null", REPORT)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_write_error_is_one_clear_message_and_the_device_stays() -> None:
    check_output("/dev/full")  # a device: nothing to tell before writing
    with pytest.raises(OutputError, match=r"^/dev/full: cannot write: No space left on device$"):
        write_json("/dev/full", REPORT)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1"])
def test_a_descriptor_path_appends_to_a_redirected_file(tmp_path: Path, path: str) -> None:
    import subprocess
    import sys

    log = tmp_path / "log.txt"
    code = (
        "import json; from defan_pytest.report.writer import write_output\n"
        "print('table', flush=True)\n"
        f"write_output({path!r}, json.dumps({{'rows': [], 'domains': {{}}, 'overall': {{}}}}))\n"
    )
    with open(log, "wb") as fh:
        subprocess.run([sys.executable, "-c", code], stdout=fh, check=True, timeout=60)
    text = log.read_text(encoding="utf-8")
    assert text.startswith("table\n") and json.loads(text[len("table\n"):]) == {"rows": [], "domains": {}, "overall": {}}


def test_a_directory_a_socket_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"):
        check_output(tmp_path)
    with pytest.raises(OutputError, match="does not exist"):
        check_output(tmp_path / "nope" / "r.json")
    with pytest.raises(OutputError, match="Not a directory"):
        check_output(Path(__file__) / "r.json")
    import socket

    sock_path = tmp_path / "s"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        with pytest.raises(OutputError, match="not a regular file, a FIFO or a character device"):
            write_json(sock_path, REPORT)
    finally:
        sock.close()


# --- names, failures, interruptions ---------------------------------------------------------------


def test_a_name_near_name_max_is_written(tmp_path: Path) -> None:
    name = "r" * 250 + ".json"  # 255 bytes: the longest name a folder takes
    check_output(tmp_path / name)
    write_json(tmp_path / name, REPORT)
    assert json.loads((tmp_path / name).read_text(encoding="utf-8")) == REPORT
    with pytest.raises(OutputError, match="(?i)file name too long"):
        check_output(tmp_path / ("r" * 251 + ".json"))


def test_check_output_leaves_nothing_behind(tmp_path: Path) -> None:
    check_output(tmp_path / "r.json")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_keeps_the_old_report_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    target = tmp_path / "r.json"
    write_json(target, {"rows": [], "domains": {}, "overall": {}})
    old = target.read_bytes()

    def fail(fd: int) -> None:
        raise failure

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(type(failure) if isinstance(failure, KeyboardInterrupt) else OutputError) as info:
        write_json(target, REPORT)
    if isinstance(info.value, OutputError):
        assert str(info.value) == f"{target}: cannot write: No space left on device"
    assert target.read_bytes() == old
    assert os.listdir(tmp_path) == ["r.json"]


def test_write_output_writes_text_as_utf8(tmp_path: Path) -> None:
    assert write_output(tmp_path / "t.txt", "Röntgen\n") == tmp_path / "t.txt"
    assert (tmp_path / "t.txt").read_bytes() == "Röntgen\n".encode("utf-8")


# --- the append mode (GitHub's step summary) -------------------------------------------------------


def test_append_mode_appends_to_a_regular_file_or_makes_one(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    assert append_output(summary, "a\n") == summary
    append_output(summary, "b\n")
    assert summary.read_text(encoding="utf-8") == "a\nb\n"
    link = tmp_path / "link.md"
    link.symlink_to(summary)
    append_output(link, "c\n")  # a link is followed, and stays a link
    assert summary.read_text(encoding="utf-8") == "a\nb\nc\n" and link.is_symlink()


def test_append_mode_never_opens_a_fifo_a_device_or_a_directory(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def append() -> None:
        try:
            append_output(fifo, "x")
        except OutputError as exc:
            done.append(exc)

    thread = threading.Thread(target=append, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():  # the old way of appending waits for a reader: give it one, then fail
        with open(fifo, "rb"):
            pass
        pytest.fail("appending to a FIFO nobody reads waits for a reader")
    assert done and "is a FIFO, not a regular file" in str(done[0])
    with pytest.raises(OutputError, match="is a device, not a regular file"):
        append_output("/dev/null", "x")
    with pytest.raises(OutputError, match="is a directory"):
        append_output(tmp_path, "x")


@pytest.mark.parametrize("name", ["r.json", "thresholds.toml", "data.csv", "answers.jsonl", "conftest.py", "ci.yml",
                                  "junit.xml", "old-report"])
def test_append_mode_never_breaks_a_structured_file_or_a_report(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps({"schema": "defan-pytest-report", "rows": []}) if name == "old-report" else "x = 1\n",
                    encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(OutputError, match=str(path)):
        append_output(path, "## summary\n")
    assert path.read_bytes() == before


def test_append_mode_never_appends_to_an_input_of_the_run(tmp_path: Path) -> None:
    data = tmp_path / "questions.txt"
    data.write_text("mine", encoding="utf-8")
    link = tmp_path / "summary.md"
    link.symlink_to(data)
    for target in (data, link):
        with pytest.raises(OutputError, match="is the data set; nothing is appended to an input of the run"):
            append_output(target, "## summary\n", inputs=[("the data set", data)])
    assert data.read_text(encoding="utf-8") == "mine"
