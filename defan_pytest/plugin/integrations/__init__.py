"""defan-pytest next to other pytest plugins: one module per plugin, imported and registered
(a plugin object of its own, ``defan-<module>``) only when that plugin is loaded, and
unregistered when the session ends - the way pytest registers ``LogXML`` only when
``--junitxml`` asks for it.  A module that needs the other plugin's own package imports it at
its top: it is imported only when that plugin runs.

Each module has ``start(config, run)``, which returns its :class:`Integration` (``None`` when the
other plugin is loaded but not asked for what the integration is about, allure without
``--alluredir`` say).
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Dict, List, Tuple

import pytest

if TYPE_CHECKING:  # the entry point imports this package in every session: run.py only for a DefAn run
    from defan_pytest.run import Run

__all__ = ["MODULES", "Integration", "plugin_name", "start", "stop"]

#: The names the other plugin is known by in pytest's plugin manager (its entry point, and its
#: module when loaded with ``-p``) -> the module of this package that works with it.
MODULES: Tuple[Tuple[Tuple[str, ...], str], ...] = (
    (("sugar",), "sugar"),
    (("html", "pytest_html.plugin"), "html_report"),
    (("pytest_jsonreport", "pytest_jsonreport.plugin"), "json_report"),
    (("allure_pytest", "allure_pytest.plugin"), "allure"),
    (("rerunfailures", "pytest_rerunfailures"), "rerunfailures"),
    (("pytest-split", "pytest_split.plugin"), "split"),
    (("pytest_github_actions_annotate_failures", "pytest_github_actions_annotate_failures.plugin"),
     "github_annotate"),
    (("xdist", "xdist.plugin"), "xdist"),
)


class Integration:
    """What the run asks of every integration (the defaults: nothing); subclasses add the
    hooks of their plugin."""

    #: A report of this plugin shows each prompt's verdict in full (a report section a prompt).
    details = False
    #: The plugin annotates failed tests in GitHub Actions itself (the gate's among them).
    annotates_failures = False

    def marks(self) -> List[pytest.MarkDecorator]:
        """Marks every DefAn test gets (asked when the tests are made, after every plugin's
        ``pytest_configure`` has registered its markers)."""
        return []

    def close(self) -> None:
        """Undo what was changed outside the session, at its end."""


def plugin_name(module: str) -> str:
    """The name an integration module's plugin object is registered as."""
    return f"defan-{module}"


def start(config: pytest.Config, run: "Run") -> Dict[str, Integration]:
    """Start and register the integration of every plugin this session runs (by module name)."""
    manager = config.pluginmanager
    started: Dict[str, Integration] = {}
    for names, module in MODULES:
        if not any(manager.hasplugin(name) for name in names):
            continue
        integration = import_module(f"{__name__}.{module}").start(config, run)
        if integration is not None:
            manager.register(integration, plugin_name(module))
            started[module] = integration
    return started


def stop(config: pytest.Config, started: Dict[str, Integration]) -> None:
    """Undo and unregister what :func:`start` started."""
    for integration in started.values():
        integration.close()
        config.pluginmanager.unregister(integration)
