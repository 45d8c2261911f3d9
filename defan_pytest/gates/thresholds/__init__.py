"""Reading and validating a ``thresholds.toml`` file, and what it sets for each scope.

A thresholds file says how bad a model may be before the DefAn gate fails a run::

    [defaults]            # every domain and the overall figure, unless overridden
    max_fch = 0.60
    max_pmh = 0.50
    min_rc = 0.30
    max_error_rate = 0.02
    min_samples = 30

    [domains.nobel]       # one domain
    max_fch = 0.35

    [overall]             # the overall figure; figure = "mean" (default) or "pooled"
    max_fch = 0.55

    [models."my-rag"]     # per-model overrides: the same defaults/domains/overall tables, plus
    temperature = 0.0     # model call parameters that the model registry interprets
    [models."my-rag".domains.nobel]
    max_fch = 0.20

    [regression]          # the regression gate (--defan-baseline): paired test's confidence
    confidence = 0.95     # and the largest change for the worse that is not a regression
    max_fch_rise = 0.02
    [regression.domains.nobel]
    max_fch_rise = 0.01   # also [regression.overall] and [models."my-rag".regression...]

The keys are not a fixed list (:mod:`~defan_pytest.gates.thresholds.keys`): every registered
metric has a limit key (``max_<name>`` when lower is better, ``min_<name>`` when higher is
better) and, when the regression gate compares it, a tolerance key (``max_<name>_rise`` /
``max_<name>_drop``), read from the registry when a file is parsed, so a metric registered by a
plugin can be limited like FCH.

Precedence, per key, lowest first (:mod:`~defan_pytest.gates.thresholds.precedence`):
``[defaults]``, ``[domains.<d>]`` (or ``[overall]``), ``[models.<m>.defaults]``,
``[models.<m>.domains.<d>]`` (or ``[models.<m>.overall]``); the same for ``[regression]``.

The file is validated as a whole (:mod:`~defan_pytest.gates.thresholds.parse`) and every problem
is reported in one :class:`ThresholdsError`, each naming the file and the dotted key. Two
mistakes that would otherwise judge a run by the wrong limits without a word are errors:

* a file named explicitly (``--defan-thresholds``) that sets no limit at all;
* a ``[models."<name>"]`` table whose name looks like a typo (:func:`model_table_typos`).

The modules: ``text`` (the TOML text: reading, keys as written, the line of a key), ``keys``,
``limits`` (:class:`Limits`), ``tables`` (the parsed tables), ``precedence``, ``resolve``
(:class:`Thresholds`), ``params`` (the model parameters' schema), ``parse`` and ``typos``.
"""
from defan_pytest.gates.thresholds.limits import Limits
from defan_pytest.gates.thresholds.parse import load_thresholds, parse_thresholds
from defan_pytest.gates.thresholds.resolve import Thresholds
from defan_pytest.gates.thresholds.text import ThresholdsError, read_toml
from defan_pytest.gates.thresholds.typos import model_table_typos

__all__ = [
    "Limits",
    "Thresholds",
    "ThresholdsError",
    "load_thresholds",
    "model_table_typos",
    "parse_thresholds",
    "read_toml",
]
