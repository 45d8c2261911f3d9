"""The settings of a run: the options' values parsed into a frozen object.

Each option is ``--defan-<noun>`` on the command line and ``defan_<noun>`` in the ini file (the
option wins); :data:`defan_pytest.settings.options.OPTIONS` is the one table both are registered
from, and the one place a default is written.  :meth:`Settings.from_values` parses and
validates them all at once: every problem is collected and raised as one :class:`ConfigError`,
before any model is called.  Nothing here imports pytest.

>>> s = Settings.from_values({"model": "my-rag", "domain": ["nobel, math"], "sample": "10%"})
>>> s.model, s.domains, str(s.sample), s.timeout, s.cache
('my-rag', ('nobel', 'math'), '10%', 60.0, '.defan_cache')
>>> Settings.from_values({"model": "m", "concurrency": "0", "timeout": "soon"})
Traceback (most recent call last):
...
defan_pytest.settings.ConfigError: 2 problems:
  - --defan-concurrency: 0 is below the minimum 1
  - --defan-timeout: 'soon' is not a number
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Literal, Mapping, Optional, Tuple, Type, TypeVar

from typing import TYPE_CHECKING

from defan_pytest.calls import models
from defan_pytest.calls.protocol import CALL_PATHS, DEFAULT_CONCURRENCY, DEFAULT_MAX_ANSWER, DEFAULT_RETRIES, DEFAULT_TIMEOUT, DEFAULT_MAX_BACKOFF
from defan_pytest.calls.sizes import parse_size
from defan_pytest.errors import DefanError, problems_of
from defan_pytest.registry import RegistryError
from defan_pytest.report.formats import FORMATS, Output
from defan_pytest.settings.options import BY_NOUN, DECISIONS, DEFAULT_CACHE, FORMAT_PROBLEMS, OPTIONS, PACES, REDUCTIONS
from defan_pytest.scoring import ner

if TYPE_CHECKING:
    from defan_pytest.dataset.sampling import Repeat, Sample
    from defan_pytest.dataset.shards import Shard

__all__ = ["ConfigError", "Settings", "model_names"]

T = TypeVar("T")


class ConfigError(DefanError):
    """Options or ini keys that cannot run: every problem at once."""


def _int(values: Mapping[str, Any], noun: str, low: int, problems: List[str]) -> int:
    raw = _value(values, noun)
    if raw is None or not str(raw).strip():
        # Given empty: said once by Settings.parse; the default stands in meanwhile.
        return int(BY_NOUN[noun].default)
    try:
        n = int(str(raw).strip())
    except ValueError:
        problems.append(f"--defan-{noun}: {raw!r} is not a whole number")
        return low
    if n < low:
        problems.append(f"--defan-{noun}: {n} is below the minimum {low}")
    return n


def _float(values: Mapping[str, Any], noun: str, problems: List[str]) -> Optional[float]:
    raw = _value(values, noun)
    if raw is None or not str(raw).strip():
        return None  # not given (or given empty: said once by Settings.parse)
    try:
        x = float(str(raw).strip())
    except ValueError:
        problems.append(f"--defan-{noun}: {raw!r} is not a number")
        return None
    if not math.isfinite(x):
        # "inf" seconds or requests per minute would wait forever, or not limit at all.
        problems.append(f"--defan-{noun}: {raw!r} is not a finite number")
        return None
    if not x > 0:
        problems.append(f"--defan-{noun}: {x:g} must be above 0")
    return x


def _given_empty(values: Mapping[str, Any], noun: str) -> bool:
    """Was the option given, but with nothing in it (``--defan-domain=`` from an unset CI
    variable, an ini key with no value)?  Not the same as not given: the default would then
    run something the user did not ask for (all 8 domains, no report, another file)."""
    value = values.get(noun)
    if value is None or value == []:
        return False  # not given at all
    if isinstance(value, (list, tuple)):
        # Repeatable options are comma-separated too: "--defan-domain=," names nothing either.
        return all(isinstance(v, str) and not v.replace(",", " ").strip() for v in value)
    return isinstance(value, str) and not value.strip()


def _encodable(value: Any) -> bool:
    """Can ``value`` (a string, or a list of them) be a file name or written as text?  A lone
    surrogate from outside the command line's own decoding (which only makes U+DC80-U+DCFF,
    for bytes that were not UTF-8) cannot: opening such a path would raise, not fail cleanly."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if isinstance(item, str):
            try:
                os.fsencode(item)
            except UnicodeEncodeError:
                return False
    return True


def _value(values: Mapping[str, Any], noun: str) -> Any:
    """The raw value of an option: given, else its default (an empty list counts as unset)."""
    value = values.get(noun)
    if value is None or value == []:
        return BY_NOUN[noun].default
    return value


def _resolve(path: str, invocation_dir: Path) -> Path:
    out = Path(path).expanduser()
    return out if out.is_absolute() else invocation_dir / out


def _unusable(values: Dict[str, Any], problems: List[str]) -> FrozenSet[str]:
    """The options given a value that cannot be used as given (empty, invalid characters): said
    once here, their value dropped (set to ``None``) so that the run does not act on them
    (Run.configure loads no data set for a bad --defan-dataset, say, rather than the public
    split in its place)."""
    invalid = set()
    for opt in OPTIONS:
        if opt.kind == "bool":
            continue
        if _given_empty(values, opt.noun):
            default = opt.shown if opt.shown is not None else str(opt.default)
            problems.append(
                f"{opt.flag}: given an empty value (an unset variable?); give a value, or leave "
                f"the option out for its default ({default})"
            )
        elif not _encodable(values.get(opt.noun)):
            problems.append(f"{opt.flag}: {values[opt.noun]!r} holds invalid characters (lone surrogates)")
        else:
            continue
        invalid.add(opt.noun)
        values[opt.noun] = None
    return frozenset(invalid)


def _parsed(
    values: Mapping[str, Any], noun: str, parse: Callable[[str], T], error: Type[Exception], problems: List[str],
) -> Optional[T]:
    """``parse`` of a text option, ``None`` when not given; its ``error`` is a problem."""
    raw = _value(values, noun)
    if raw is None or not str(raw).strip():
        return None
    try:
        return parse(str(raw))
    except error as exc:
        problems.append(f"--defan-{noun}: {exc}")
        return None


def _choice(values: Mapping[str, Any], noun: str, choices: Tuple[str, ...], problems: List[str]) -> str:
    """One of ``choices`` (the option's default when the value is not one of them)."""
    default = str(BY_NOUN[noun].default)
    value = str(_value(values, noun) or default).strip()
    if value not in choices:
        problems.append(f"--defan-{noun}: {value!r} is not one of: {', '.join(choices)}")
        return default
    return value


def _spacy(values: Mapping[str, Any], problems: List[str]) -> Optional[str]:
    spec = ner.resolve_spec(_value(values, "spacy-model"))
    if spec is not None:
        try:
            ner.check(spec)
        except ner.NerError as exc:
            problems.append(f"--defan-spacy-model: {exc}")
    return spec


def _limits(values: Mapping[str, Any], problems: List[str]) -> Dict[str, Any]:
    """The numbers of the calls: the budget, how many at once and per minute, retries, timeout."""
    return {
        "budget": _float(values, "budget", problems), "concurrency": _int(values, "concurrency", 1, problems),
        "rpm": _float(values, "rpm", problems), "tpm": _float(values, "tpm", problems), "retries": _int(values, "retries", 0, problems),
        "timeout": _float(values, "timeout", problems) or DEFAULT_TIMEOUT,
        "max_backoff": _float(values, "max-backoff", problems) or DEFAULT_MAX_BACKOFF,
        "max_answer": _parsed(values, "max-answer", parse_size, ValueError, problems) or DEFAULT_MAX_ANSWER,
    }


def _as_given(values: Mapping[str, Any]) -> Dict[str, Any]:
    """The options taken as given: texts (stripped where they name something) and switches."""
    return {
        "model": next(iter(model_names(_value(values, "model"))), ""),
        "models": tuple(model_names(_value(values, "model"))),
        "compare_to": str(_value(values, "compare-to") or "").strip() or None,
        "dataset": str(_value(values, "dataset") or "public").strip(),
        "thresholds": _value(values, "thresholds") or None,
        "baseline": _value(values, "baseline") or None,
        "cache": str(_value(values, "cache") or DEFAULT_CACHE).strip(),
        **{noun.replace("-", "_"): bool(_value(values, noun))
           for noun in ("force-output", "strict", "gate-narrowed", "with-tests", "baseline-force", "sequential")},
    }


def model_names(value: Any) -> List[str]:
    """The models of ``--defan-model`` (repeatable, comma-separated, or one string): in order,
    each once, blanks dropped."""
    given = [value] if isinstance(value, str) else list(value or ())
    names = [x.strip() for v in given for x in str(v).split(",")]
    return list(dict.fromkeys(n for n in names if n))


def _models_problems(values: Mapping[str, Any]) -> List[str]:
    """``--defan-compare-to`` names one of several models given."""
    names = model_names(_value(values, "model"))
    target = str(_value(values, "compare-to") or "").strip()
    if not target:
        return []
    if len(names) < 2:
        return [f"--defan-compare-to {target}: compares models of one run; give two or more with --defan-model"]
    if target not in names:
        return [f"--defan-compare-to {target}: not one of the models given (--defan-model): {', '.join(names)}"]
    return []


def _outputs(values: Mapping[str, Any], invocation_dir: Path) -> Dict[str, Output]:
    """The report formats asked for (format name -> where), each by its option."""
    outputs: Dict[str, Output] = {}
    for fmt in FORMATS.values():
        given = _value(values, fmt.option) if fmt.option in BY_NOUN else None
        if given:
            outputs[fmt.name] = Output(f"--defan-{fmt.option}", str(given), _resolve(str(given), invocation_dir))
    return outputs


@dataclass(frozen=True)
class Settings:
    """Every setting of one run, parsed and validated.

    ``root`` is the folder relative paths of the cache and the dataset are taken from (the
    rootdir); ``invocation_dir`` the one a relative ``--defan-report`` or ``--defan-thresholds``
    is taken from (where pytest was started).  ``outputs``: the report formats asked for (format
    name -> :class:`~defan_pytest.report.formats.Output`: ``--defan-report``, ``--defan-html``,
    an added format's option).
    """

    model: str
    #: Every model of the session (``--defan-model`` repeatable): :attr:`model` is the one this
    #: run asks (:meth:`for_model`), and ``compare_to`` the one the others are compared with.
    models: Tuple[str, ...] = ()
    compare_to: Optional[str] = None
    domains: Tuple[str, ...] = ()
    dataset: str = "public"
    sample: Optional["Sample"] = None
    seed: int = 0
    #: ``--defan-repeat``: the prompts asked more than once, and how many times (``None``: off).
    repeat: Optional["Repeat"] = None
    #: ``--defan-repeat-reduce``: how a prompt's repeated answers make its verdict.
    repeat_reduce: str = "mean"
    thresholds: Optional[str] = None
    outputs: Mapping[str, Output] = field(default_factory=dict)
    shard: Optional["Shard"] = None
    force_output: bool = False
    strict: bool = False
    gate_narrowed: bool = False
    #: ``--defan-with-tests``: the project's own tests are collected beside the prompts.
    with_tests: bool = False
    baseline: Optional[str] = None
    baseline_force: bool = False
    decide: str = "point"
    #: ``--defan-sequential``: stop asking once the gates' verdicts are settled.
    sequential: bool = False
    spacy_model: Optional[str] = None
    concurrency: int = DEFAULT_CONCURRENCY
    pace: str = "adaptive"
    rpm: Optional[float] = None
    tpm: Optional[float] = None
    retries: int = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT
    max_backoff: float = DEFAULT_MAX_BACKOFF
    max_answer: int = DEFAULT_MAX_ANSWER
    model_args: Mapping[str, Any] = field(default_factory=dict)
    call_path: str = "auto"
    budget: Optional[float] = None
    cache: str = DEFAULT_CACHE
    root: Path = Path(".")
    invocation_dir: Path = Path(".")
    #: Options given a value that cannot be used (empty, invalid characters): already reported
    #: by :meth:`parse`, and not acted on (their field holds the default).
    invalid: FrozenSet[str] = frozenset()

    @classmethod
    def from_values(
        cls,
        values: Mapping[str, Any],
        root: Optional[Path] = None,
        invocation_dir: Optional[Path] = None,
    ) -> "Settings":
        """Parse raw option values (``{noun: value}``, strings as typed, lists for the
        repeatable options); a missing noun takes its default.  Raises :class:`ConfigError`
        listing every problem."""
        settings, problems = cls.parse(values, root, invocation_dir)
        if problems:
            raise ConfigError(problems=problems)
        return settings

    @classmethod
    def parse(
        cls,
        values: Mapping[str, Any],
        root: Optional[Path] = None,
        invocation_dir: Optional[Path] = None,
    ) -> Tuple["Settings", List[str]]:
        """Like :meth:`from_values`, but return the problems (so that a caller can add the
        problems of the dataset, the thresholds and the model and report them all at once)."""
        # lazy: start-up. The dataset package (its fetcher and readers) loads when a run is configured, not when
        # pytest starts: this module is imported on every pytest start (the plugin's options).
        from defan_pytest.dataset.sampling import SampleError, parse_repeat, parse_sample
        from defan_pytest.dataset.shards import ShardError, parse_shard

        unknown = sorted(set(values) - set(BY_NOUN))
        if unknown:
            raise ConfigError(f"unknown settings {', '.join(unknown)}; known: {', '.join(BY_NOUN)}")
        problems: List[str] = list(FORMAT_PROBLEMS)
        values = dict(values)
        invalid = _unusable(values, problems)
        names: List[str] = []
        for v in _value(values, "domain") or []:
            names.extend(x.strip() for x in str(v).split(",") if x.strip())
        sample = _parsed(values, "sample", parse_sample, SampleError, problems)
        seed = _int(values, "seed", -(2**63), problems)
        repeat = _parsed(values, "repeat", parse_repeat, SampleError, problems)
        shard = _parsed(values, "shard", parse_shard, ShardError, problems)
        # Blank entries are said once above (all blank) or are no parameter at all.
        model_args, arg_problems = models.parse_model_args([v for v in _value(values, "model-arg") or () if str(v).strip()])
        problems.extend(arg_problems)
        spacy_model = _spacy(values, problems)
        decide = _choice(values, "decide", DECISIONS, problems)
        repeat_reduce = _choice(values, "repeat-reduce", REDUCTIONS, problems)
        call_path = _choice(values, "call-path", CALL_PATHS, problems)
        pace = _choice(values, "pace", PACES, problems)
        invocation_dir = invocation_dir if invocation_dir is not None else Path.cwd()
        problems.extend(_models_problems(values))
        settings = cls(
            domains=tuple(names), sample=sample, seed=seed, repeat=repeat, shard=shard, model_args=model_args,
            spacy_model=spacy_model, decide=decide, repeat_reduce=repeat_reduce, call_path=call_path, pace=pace, **_limits(values, problems),
            **_as_given(values), outputs=_outputs(values, invocation_dir),
            root=root if root is not None else Path.cwd(), invocation_dir=invocation_dir, invalid=invalid,
        )
        return settings, problems

    def for_model(self, model: str) -> "Settings":
        """These settings for the run of one of the session's :attr:`models`."""
        return replace(self, model=model)

    def resolve_output(self, path: str) -> Path:
        """An output path as the user meant it: relative to where pytest was started."""
        return _resolve(path, self.invocation_dir)
