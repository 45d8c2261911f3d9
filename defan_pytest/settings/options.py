"""The option table: every ``--defan-<noun>`` option (``defan_<noun>`` in the ini file), its
kind, help and default, stated once; the built-in ones, then those of the report formats other
packages add (read from :data:`defan_pytest.report.formats.FORMATS` when this module is
imported).  The plugin registers its options from :data:`OPTIONS`; :mod:`defan_pytest.settings`
parses their values."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Literal, Optional, Tuple

from defan_pytest.calls.protocol import CALL_PATHS, DEFAULT_CONCURRENCY, DEFAULT_RETRIES, DEFAULT_TIMEOUT, DEFAULT_MAX_BACKOFF
from defan_pytest.errors import problems_of
from defan_pytest.registry import RegistryError
from defan_pytest.report.formats import FORMATS
from defan_pytest.scoring import ner

__all__ = ["BY_NOUN", "DECISIONS", "REDUCTIONS", "DEFAULT_CACHE", "FORMAT_PROBLEMS", "OPTIONS", "Option"]

#: Folder of the response cache, relative to the rootdir.
DEFAULT_CACHE = ".defan_cache"

#: How the level gate decides (``--defan-decide``): on the point estimate, or only when the
#: whole interval lies beyond the limit.
DECISIONS: Tuple[str, ...] = ("point", "interval")
#: How a prompt's repeated answers make its verdict (``--defan-repeat-reduce``).
REDUCTIONS: Tuple[str, ...] = ("mean", "all")
#: How the requests in flight are paced (``--defan-pace``, :mod:`defan_pytest.calls.pace`).
PACES: Tuple[str, ...] = ("adaptive", "fixed")

Kind = Literal["string", "bool", "linelist", "args"]


@dataclass(frozen=True)
class Option:
    """One option: ``--defan-<noun>`` and the ini key ``defan_<noun>``.

    ``default`` is what the ini key defaults to (``None``: unset); ``shown`` is how the help
    text states the default when the value alone would not say it.
    """

    noun: str
    kind: Kind
    default: Any
    help: str
    shown: Optional[str] = None

    @property
    def flag(self) -> str:
        """The command-line flag, ``--defan-<noun>``."""
        return f"--defan-{self.noun}"

    @property
    def dest(self) -> str:
        """The attribute and ini key, ``defan_<noun>`` (dashes as underscores)."""
        return "defan_" + self.noun.replace("-", "_")

    @property
    def help_text(self) -> str:
        """The help text with its default, as ``--help`` and ``pytest --help`` show it."""
        shown = self.shown if self.shown is not None else str(self.default)
        return f"{self.help} (default: {shown})"


_BUILT_IN: Tuple[Option, ...] = (
    Option("model", "linelist", None,
           "model to evaluate: a name registered with @defan_pytest.model, a [models.<name>] table, "
           "or a litellm model string such as openai/gpt-4o-mini; repeatable and comma-separated: "
           "every prompt is asked of every model, each judged by its own gate",
           shown="none, plugin inactive"),
    Option("domain", "linelist", None,
           "DefAn domain(s) to run, repeatable and comma-separated: sports, census, nobel, "
           "entertainment, world_org, qs_ranking, conference_venue, math", shown="all"),
    Option("dataset", "string", "public",
           "'public' (the DefAn public split, downloaded and sha256-checked on first use, or read "
           "from DEFAN_DATA_DIR), a folder holding the public CSV files, or a CSV/JSON/JSONL file of "
           "your own"),
    Option("sample", "string", None,
           "run a stratified sample: N prompts, P% of each domain's paraphrase groups or Ng groups "
           "per domain, whole groups only, each domain at least its min_samples groups",
           shown="every prompt"),
    Option("seed", "string", "0", "seed of --defan-sample"),
    Option("repeat", "string", None,
           "measure the model's own non-determinism: 'K' asks every selected prompt K times, 'K:N' a "
           "stratified sample of about N prompts (whole paraphrase groups) K times (K from 2 to 20); the summary, "
           "the report and the regression gate state how often the answers and verdicts agree, and every "
           "answer counts in FCH, PMH, RC and the regression gate (--defan-repeat-reduce)",
           shown="off"),
    Option("repeat-reduce", "string", "mean",
           "how a prompt's repeated answers make its verdict: 'mean' (its FCH and PMH are the share of its "
           "answers that are wrong, misaligned; RC the share of the rounds that agree) or 'all' (right only "
           "when every answer is: pass^k)"),
    Option("shard", "string", None,
           "run shard I of N (I/N, e.g. 2/4): a deterministic, disjoint share of the selected paraphrase "
           "groups, balanced across domains; its gates are skipped and 'defan merge' judges the shards' "
           "reports together", shown="none: the whole selection"),
    Option("thresholds", "string", None,
           "thresholds file of the gate", shown="thresholds.toml in the rootdir, if present"),
    # The built-in report formats' options (each format's ``option``, report.formats).
    Option("report", "string", None,
           "write the JSON report (same schema as 'defan score --json') to this file", shown="none"),
    Option("html", "string", None,
           "write a self-contained HTML report (charts, verdicts, every prompt, paraphrase groups) to this "
           "file", shown="none"),
    Option("force-output", "bool", False,
           "let --defan-report replace an existing file that is not a defan report (an input of the "
           "run, a .py, .toml, .cfg, .ini, .csv or .jsonl file is never replaced)",
           shown="off: only an earlier report or an empty file is replaced"),
    Option("strict", "bool", False,
           "fail each hallucinated or misaligned prompt on its own", shown="off; the gate decides"),
    Option("gate-narrowed", "bool", False,
           "judge the gate even when -k, -m, --deselect, --lf, a path or pytest-split ran only part "
           "of the selected prompts", shown="off: such a run's gate is skipped"),
    Option("with-tests", "bool", False,
           "also collect the project's own tests (the paths named, else testpaths, else the current "
           "folder) beside the DefAn prompts; the exit code then counts them too",
           shown="off: a DefAn run collects its prompts and verdicts only"),
    Option("baseline", "string", None,
           "a report of an earlier run (--defan-report) to compare with: the regression gate judges "
           "the change on the prompts both runs hold, by a paired test over paraphrase groups",
           shown="none: no regression gate"),
    Option("baseline-force", "bool", False,
           "compare with --defan-baseline even when it was made on another data set or by another "
           "scorer", shown="off: such a baseline is refused"),
    Option("compare-to", "string", None,
           "with several --defan-model: judge every other model against this one by the regression "
           "gate's paired test, per domain and overall", shown="none: the models are not compared"),
    Option("decide", "string", "point",
           "how the level gate decides: 'point' fails a figure beyond its limit; 'interval' fails it "
           "only when its whole 95% interval lies beyond the limit (for small pull-request samples)"),
    Option("sequential", "bool", False,
           "ask whole paraphrase groups in batches, in the seed's order, and stop asking once every "
           "judged scope's verdict is settled by an anytime-valid test (or one scope fails); the prompts "
           "not asked are skipped; needs --defan-baseline or a thresholds file's limits",
           shown="off: every selected prompt is asked"),
    Option("spacy-model", "string", "auto",
           "spaCy pipeline for names and places: a package name, a folder, 'auto' (first installed "
           "English pipeline) or 'none'"),
    Option("concurrency", "string", str(DEFAULT_CONCURRENCY),
           "the most requests in flight at once (fewer where the server queues them: --defan-pace)"),
    Option("pace", "string", "adaptive",
           "'adaptive' lowers the requests in flight to what the server serves at once (the slots a "
           "local server states, its queueing, timeouts under load) and raises them again; 'fixed' keeps "
           "--defan-concurrency"),
    Option("rpm", "string", None, "at most this many requests per minute", shown="no limit"),
    Option("tpm", "string", None,
           "at most this many tokens (prompt and completion) per minute; a server's x-ratelimit headers "
           "are kept to as well", shown="no limit"),
    Option("retries", "string", str(DEFAULT_RETRIES),
           "retries of a call after 429, 5xx, a timeout or a dropped connection"),
    Option("timeout", "string", f"{DEFAULT_TIMEOUT:g}", "seconds one call may take"),
    Option("max-backoff", "string", f"{DEFAULT_MAX_BACKOFF:g}",
           "the most seconds one wait before a retry may last; a provider's Retry-After beyond it is "
           "capped (said once)"),
    Option("max-answer", "string", "1M",
           "the most bytes of one answer (read from the wire, or returned by a callable: 512k, 1M, 4MiB); a "
           "larger answer is an error, never kept"),
    Option("model-arg", "args", None,
           "KEY=VALUE call parameter for a litellm model, repeatable: temperature=0.2, "
           "api_base=http://..., max_tokens=64 (values are JSON where they parse)", shown="none"),
    Option("call-path", "string", "auto",
           "how calls reach a litellm model: 'auto' (the lean OpenAI-protocol client for openai/..., "
           "azure/..., hosted_vllm/... and any api_base, litellm for other providers), 'litellm' (always "
           "litellm), 'openai' (always the lean client; an error where it cannot send what litellm would)"),
    Option("budget", "string", None,
           "stop sending prompts once the spending (USD) plus the requests in flight would pass this; the "
           "prompts not sent are errors, every answer is kept in the cache for a resumed run (needs a price: "
           "litellm's price table, or price_in/price_out in [models.<name>])", shown="no limit"),
    Option("cache", "string", DEFAULT_CACHE,
           "response cache: a folder (relative to the rootdir), 'off', or 'refresh' (call again and "
           "overwrite)"),
)


def _format_options(built_in: FrozenSet[str]) -> Tuple[Tuple[Option, ...], Tuple[str, ...]]:
    """The options of the report formats other packages add (``format.<name>`` entry points),
    and the problems of loading them (reported when a run configures, never at import)."""
    try:
        formats = FORMATS.values()
    except RegistryError as exc:
        return (), tuple(problems_of(exc))
    return tuple(
        Option(f.option, "string", None, f.help, shown="none") for f in formats if f.option and f.option not in built_in
    ), ()


#: The problems of loading other packages' formats (reported when a run configures).
_FORMAT_OPTIONS, FORMAT_PROBLEMS = _format_options(frozenset(o.noun for o in _BUILT_IN))
#: Every option, in the order ``--help`` lists them: the built-in ones, then those of the report
#: formats other packages add.
OPTIONS: Tuple[Option, ...] = _BUILT_IN + _FORMAT_OPTIONS
#: Each option by its noun.
BY_NOUN: Dict[str, Option] = {o.noun: o for o in OPTIONS}
