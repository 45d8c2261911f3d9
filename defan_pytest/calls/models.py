"""The model registry: a user's own callables, and litellm model strings.

A user registers their application (a RAG pipeline, an agent, a prompt template around a model)
in ``conftest.py``::

    import defan_pytest

    @defan_pytest.model("my-rag", version="2024-06-01")
    async def my_rag(prompt: str) -> str:
        return await pipeline.answer(prompt)

and runs ``pytest --defan-model=my-rag``.  Any other name is a model string: litellm's
(``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku``) or one a plugin's backend knows,
optionally described by a ``[models.<name>]`` table.  Which backend calls the model is
:func:`defan_pytest.calls.backends.choose`'s business.  Nothing here imports litellm.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import json
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from defan_pytest.calls.fingerprint import Fingerprint
from defan_pytest.errors import DefanError


class ModelError(DefanError):
    """An unknown or malformed model."""


@dataclass(frozen=True)
class CallableModel:
    """A user's function: ``prompt -> answer text`` (sync or async), or the text with its finish
    reason (:func:`defan_pytest.calls.protocol.answer_reply`).

    ``source``: a digest of the function's source code (:func:`source_digest`), taken when it
    is registered; part of the cache key, with ``version``.  ``inputs``: the files and folders
    the application reads (a knowledge base, prompt files), relative to the rootdir.
    ``fingerprint``: the digest of the project's imported source files and of ``inputs``
    (:mod:`defan_pytest.calls.fingerprint`), taken when the run is configured; :meth:`fingerprinted`
    folds it into ``source``, so that editing the application asks it again.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool
    version: Optional[str] = None
    source: str = ""
    inputs: Tuple[str, ...] = ()
    fingerprint: Optional[Fingerprint] = None

    def fingerprinted(self, fingerprint: Fingerprint) -> "CallableModel":
        """This model with ``fingerprint`` taken and folded into its ``source`` digest."""
        return dataclasses.replace(self, source=_sha(f"{self.source}|{fingerprint.digest}"), fingerprint=fingerprint)

    def __post_init__(self) -> None:
        if not self.source:
            object.__setattr__(self, "source", source_digest(self.fn))

    def describe(self) -> str:
        """``my-rag version 2024-06-01, source 3f2a9c1b``: which code the answers belong to."""
        version = f"version {self.version}" if self.version is not None else "no version"
        covered = f" ({self.fingerprint.describe()})" if self.fingerprint is not None else ""
        return f"{self.name} {version}, source {self.source[:8]}{covered}"


@dataclass(frozen=True)
class LitellmModel:
    """A model string (litellm's, or one a plugin's backend knows) and the keyword arguments of
    every call.

    ``price_in`` and ``price_out``: USD per million prompt and completion tokens, from the
    model's ``[models.<name>]`` table (``None``: litellm's price table, if it knows the model).
    Never sent, never part of the cache identity.
    """

    name: str
    model: str
    params: Mapping[str, Any] = field(default_factory=dict)
    system_prompt: Optional[str] = None
    price_in: Optional[float] = None
    price_out: Optional[float] = None


Model = Any  # CallableModel | LitellmModel

_REGISTRY: Dict[str, CallableModel] = {}


def model(name: str, *, version: Optional[str] = None,
          inputs: Sequence[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the model ``name`` (a decorator).

    ``fn(prompt)`` (sync or async) returns the answer: a ``str`` (its finish reason unknown), or
    ``{"text": ..., "finish_reason": "length"}`` (or an object with both attributes) to say why
    the model stopped (``length``: cut by the token limit, scored as cut).

    Cached answers are reused only for the same name, ``version`` and code: the function's own
    source, and every source file of the project that is imported when the run starts (modules
    under the rootdir, outside site-packages and the virtual environment), and the files and
    folders named in ``inputs`` (a RAG's knowledge base: ``inputs=["knowledge/"]``).  Without a
    version nothing is reused across runs.  What the application reads from elsewhere (a model
    server, a database) is not covered: change ``version`` when it changes.
    """
    if isinstance(inputs, str) or not all(isinstance(i, str) and i.strip() for i in inputs):
        raise ModelError(f"model {name!r}: inputs= takes a list of file or folder paths, got {inputs!r}")
    if not isinstance(name, str) or not name.strip():
        raise ModelError("a model name must be a non-empty string")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise ModelError(f"model {name!r}: {fn!r} is not callable")
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        _REGISTRY[name] = CallableModel(name, fn, is_async, version, inputs=tuple(inputs))
        return fn

    return register


def _code_text(code: types.CodeType) -> str:
    """What a code object does, for a function whose source cannot be read: its bytecode,
    constants (nested functions' code included) and names."""
    consts = [(_code_text(c) if isinstance(c, types.CodeType) else repr(c)) for c in code.co_consts]
    return f"{code.co_code.hex()}|{consts}|{code.co_names}"


def source_digest(fn: Any) -> str:
    """A sha256 of a callable's source code, so that editing a registered model without
    changing its ``version`` does not reuse the old code's cached answers.

    The source text (``inspect.getsource``; decorated functions are unwrapped), else its code
    object's bytecode and constants, else the class of a callable object; for a
    ``functools.partial``, its function and arguments.
    """
    if isinstance(fn, functools.partial):
        return _sha(f"partial|{source_digest(fn.func)}|{fn.args!r}|{sorted(fn.keywords.items())!r}")
    for target in (fn, type(fn)):
        try:
            return _sha(inspect.getsource(target))
        except (OSError, TypeError):
            pass
        if target is not fn:
            break
    code = getattr(inspect.unwrap(fn), "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    if isinstance(code, types.CodeType):
        return _sha(_code_text(code))
    return _sha(f"{type(fn).__module__}.{type(fn).__qualname__}")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def registered() -> Dict[str, CallableModel]:
    """The registered callables by name."""
    return dict(_REGISTRY)


def unregister(name: str) -> None:
    """Forget a registered model (tests register and drop their own)."""
    _REGISTRY.pop(name, None)


@lru_cache(maxsize=1)
def litellm_table() -> Mapping[str, Any]:
    """litellm's bundled model table (prices, providers, context windows), read without
    importing litellm (an import costs seconds of CPU; bench/call_speed.py): about 40 ms, once
    per process.  Empty when litellm is not installed or the file cannot be read."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return {}
    folder = Path(list(spec.submodule_search_locations)[0])
    table = folder / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(table.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return types.MappingProxyType(data) if isinstance(data, dict) else {}


def litellm_provider(name: str) -> Optional[str]:
    """The provider litellm's table gives a bare model name (``gpt-4o-mini`` -> ``openai``)."""
    entry = litellm_table().get(name)
    provider = entry.get("litellm_provider") if isinstance(entry, Mapping) else None
    return str(provider) if provider else None


@lru_cache(maxsize=1)
def _litellm_catalogue() -> Tuple[frozenset, frozenset]:
    """Known litellm model names and provider prefixes, from :func:`litellm_table`."""
    data = litellm_table()
    if not data:
        return frozenset(), frozenset()
    names = frozenset(k for k in data if k != "sample_spec")
    providers = {str(v.get("litellm_provider", "")) for v in data.values() if isinstance(v, dict)}
    providers |= {n.split("/")[0] for n in names if "/" in n}
    # Providers that serve any model name (self-hosted, OpenAI-compatible servers).
    providers |= {"openai", "azure", "ollama", "ollama_chat", "hosted_vllm", "huggingface", "openrouter",
                  "together_ai", "groq", "custom_openai", "litellm_proxy", "lm_studio", "llamafile", "vllm"}
    return names, frozenset(p for p in providers if p)


def litellm_knows(name: str) -> bool:
    """Whether litellm can call ``name``: a model of its bundled table, or ``PROVIDER/MODEL``
    with a provider it knows (:func:`defan_pytest.calls.backends.check_name` asks it)."""
    names, providers = _litellm_catalogue()
    return name in names or ("/" in name and name.split("/", 1)[0] in providers)


def resolve(name: str, tables: Mapping[str, Mapping[str, Any]], overrides: Mapping[str, Any]) -> Model:
    """The model to call for ``name``: a registered callable, or a litellm model built from a
    ``[models.<name>]`` table and ``--defan-model-arg`` overrides (which win)."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    table = dict(tables.get(name, {}))
    params: Dict[str, Any] = {"temperature": 0}
    model_string = str(table.pop("model", name))
    system_prompt = table.pop("system_prompt", None)
    table.pop("version", None)
    for key in CALL_LIMITS:  # the pool's, never call parameters (call_limits)
        table.pop(key, None)
    # Prices are ours (usage and --defan-budget), never call parameters.
    prices = {k: table.pop(k) for k in ("price_in", "price_out") if k in table}
    extra = table.pop("litellm", {}) or {}
    params.update({k: v for k, v in table.items()})
    params.update(extra)
    overrides = dict(overrides)
    if "model" in overrides:
        model_string = str(overrides.pop("model"))
    if "system_prompt" in overrides:
        system_prompt = overrides.pop("system_prompt")
    prices.update({k: overrides.pop(k) for k in ("price_in", "price_out") if k in overrides})
    params.update(overrides)
    return LitellmModel(name, model_string, params, system_prompt,
                        price_in=_price(prices.get("price_in")), price_out=_price(prices.get("price_out")))


def _price(value: Any) -> Optional[float]:
    """A price per million tokens as given (a number, or a numeric string from the command
    line), or ``None``."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_model_args(values: Any) -> Tuple[Dict[str, Any], list]:
    """``KEY=VALUE`` strings into call parameters (JSON values where they parse: ``0.2``,
    ``true``, ``{"a": 1}``; text otherwise).  Returns the parameters and the problems."""
    out: Dict[str, Any] = {}
    problems = []
    for item in values or ():
        if "=" not in item:
            problems.append(f"--defan-model-arg {item!r}: expected KEY=VALUE")
            continue
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key.isidentifier():
            problems.append(f"--defan-model-arg {item!r}: {key!r} is not a parameter name")
            continue
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out, problems


#: The keys of a ``[models.<name>]`` table that set the pool of that model's calls (in a session
#: of several models each model has its own): at most this many requests in flight, per minute.
CALL_LIMITS = ("concurrency", "rpm")


def call_limits(name: str, tables: Mapping[str, Mapping[str, Any]]) -> Tuple[Dict[str, Any], list]:
    """A model's own ``concurrency`` (a whole number, 1 or more) and ``rpm`` (a number above 0)
    from its ``[models.<name>]`` table, which win over ``--defan-concurrency`` and ``--defan-rpm``
    for that model; and the problems of values that are neither."""
    table = tables.get(name, {}) or {}
    out: Dict[str, Any] = {}
    problems = []
    value = table.get("concurrency")
    if value is not None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            out["concurrency"] = value
        else:
            problems.append(f"[models.{name}] concurrency: {value!r} is not a whole number of requests, 1 or more")
    value = table.get("rpm")
    if value is not None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf"):
            out["rpm"] = float(value)
        else:
            problems.append(f"[models.{name}] rpm: {value!r} is not a number of requests per minute above 0")
    return out, problems


def price_problems(name: str, tables: Mapping[str, Mapping[str, Any]], overrides: Mapping[str, Any]) -> list:
    """``price_in`` / ``price_out`` given (in the model's table or ``--defan-model-arg``) that
    are not a number of USD per million tokens, 0 or more."""
    problems = []
    for where, source in ((f"[models.{name}]", tables.get(name, {}) or {}), ("--defan-model-arg", overrides)):
        for key in ("price_in", "price_out"):
            if key not in source:
                continue
            value = _price(source[key])
            if value is None or not value >= 0 or value == float("inf"):
                problems.append(f"{where} {key}: {source[key]!r} is not a price (USD per million tokens, 0 or more)")
    return problems
