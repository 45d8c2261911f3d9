"""The pytest plugin (the ``pytest11`` entry point): the hooks pytest needs from the moment it
loads the plugin, which it does in every session.

Without ``--defan-model`` the plugin registers its options and does nothing else: no dataset,
no spaCy, no litellm is imported.  With it, ``pytest_configure`` starts the run's
:class:`~defan_pytest.plugin.session.DefanPlugin` (every problem is one usage error, before
any call), which registers the run's terminal output and the integrations of the other plugins
the session runs.  Each selected DefAn prompt becomes a test item; all model calls of the
process go through one pool; each item scores its answer and puts the verdict on
``report.user_properties``; the controller (the only process that aggregates, with or without
xdist) computes the domain figures, runs the gate and writes the reports.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pytest

from defan_pytest.plugin import hookspecs, integrations
from defan_pytest.safetext import printable
from defan_pytest.settings import model_names
from defan_pytest.settings.options import OPTIONS

if TYPE_CHECKING:
    from defan_pytest.plugin.session import DefanPlugin

#: The ``defan_scorer`` fixture, a plugin module of its own, loaded with this one.
pytest_plugins = ["defan_pytest.plugin.fixtures"]

#: The run's plugin, in the config's stash while the session runs.
SESSION = pytest.StashKey["DefanPlugin"]()
#: The paths a DefAn run was given and does not collect (``--defan-with-tests`` collects them).
DROPPED = pytest.StashKey[List[str]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("defan", "DefAn hallucination benchmark (defan-pytest)")
    for opt in OPTIONS:
        # argparse formats help with %: a literal one must be doubled on the command line.
        cli_help = opt.help_text.replace("%", "%%")
        if opt.kind == "bool":
            group.addoption(opt.flag, action="store_true", dest=opt.dest, default=None, help=cli_help)
        elif opt.kind in ("linelist", "args"):
            group.addoption(opt.flag, action="append", dest=opt.dest, default=None, metavar="VALUE", help=cli_help)
        else:
            group.addoption(opt.flag, action="store", dest=opt.dest, default=None, metavar="VALUE", help=cli_help)
        parser.addini(opt.dest, help=opt.help_text, type=opt.kind, default=opt.default)


def option_values(config: pytest.Config) -> Dict[str, Any]:
    """Every option's raw value: the command line, else the ini key."""
    values: Dict[str, Any] = {}
    for opt in OPTIONS:
        value = config.getoption(opt.dest)
        if value is None or value == []:
            value = config.getini(opt.dest)
        values[opt.noun] = value
    return values


def pytest_configure(config: pytest.Config) -> None:
    values = option_values(config)
    names = model_names(values["model"])
    if not names:
        if values["model"] not in (None, []):
            # Given, but empty (--defan-model=$MODEL with the variable unset): running without
            # the plugin would pass a CI job that was meant to gate a model.
            raise pytest.UsageError(
                "defan-pytest: --defan-model: given an empty value (an unset variable?); give a model, "
                "or leave the option out to run without defan-pytest"
            )
        return
    # lazy: start-up. Imported here, for a DefAn run only: the run's modules (the dataset, the gates, the
    # reports) cost more to import than the rest of the plugin, and pytest imports this module
    # in every session (tests/test_plugin.py checks what a session without --defan-model loads).
    from defan_pytest.plugin.session import DefanPlugin

    if len(names) == 1:
        plugin = DefanPlugin.start(config, dict(values, model=names[0]))
    else:
        # lazy: start-up. A session of several models only.
        from defan_pytest.plugin import models

        plugin = models.start(config, values, names)
    config.stash[SESSION] = plugin
    if not plugin.run.settings.with_tests:
        config.stash[DROPPED] = defan_only(config)


def defan_only(config: pytest.Config) -> List[str]:
    """A DefAn run collects its prompts and verdicts and no other test, whatever the project's
    layout: no path is collected (the ones named, ``testpaths``, or the folder pytest started
    in), so neither the project's tests nor their collection errors reach the exit code, which is
    the gates'.  ``--defan-with-tests`` collects them as usual.  The conftest.py files of the
    paths named are already loaded (pytest reads them before this hook), so a model registered
    in ``evals/conftest.py`` still runs with ``pytest evals --defan-model=...``.  Returns the paths
    named (on the command line or in ``addopts``), which the header lists."""
    named = list(config.args) if config.args_source is pytest.Config.ArgsSource.ARGS else []
    config.args = []
    return named


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.stash.get(SESSION, None)
    if plugin is not None:
        del config.stash[SESSION]
        plugin.stop()


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object) -> Optional[List[str]]:
    """``assert defan_pytest.score(...) == "right"`` fails with the verdict, claim, gold and the
    rules that decided, in place of two reprs."""
    # Without defan_pytest.assertions loaded nothing compared is an AnswerScore: no import (the
    # scorer's modules) for a session that never scores an answer of its own.
    assertions = sys.modules.get("defan_pytest.assertions")
    if op != "==" or assertions is None or not isinstance(left, assertions.AnswerScore) or not isinstance(right, str):
        return None
    return [f"verdict {left.verdict!r} == {right!r}", *left.explain().splitlines()]


def pytest_report_header(config: pytest.Config) -> Optional[List[str]]:
    """The model, the size of the run and which scorer runs (a hook of this module, so that
    its lines come before those of the project's conftest.py); the paths given and not
    collected."""
    plugin = config.stash.get(SESSION, None)
    if plugin is None:
        return None
    dropped = config.stash.get(DROPPED, [])
    return [*plugin.header_lines(), *(
        [f"defan: not collected: {', '.join(printable(p) for p in dropped)} (a DefAn run asks its prompts only; "
         "--defan-with-tests runs the project's tests too)"] if dropped else []
    )]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: List[pytest.Item]) -> None:
    """pytest-split: take the DefAn prompts out before it splits the other tests
    (:mod:`defan_pytest.plugin.integrations.split`).  A hook of this module, registered before
    pytest-split registers its own plugin in pytest_configure: it runs after -k, -m and
    --deselect and before pytest-split's own trylast split."""
    split = config.pluginmanager.get_plugin(integrations.plugin_name("split"))
    if split is not None:
        split.take_share(items)
