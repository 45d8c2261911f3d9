"""The model backends: how a prompt reaches a model, one module per backend behind one
interface (:class:`defan_pytest.calls.protocol.Backend`), in one registry (:data:`BACKENDS`).

* ``callable`` (:mod:`.callables`): a user's function registered with ``@defan_pytest.model``.
* ``openai`` (:mod:`.openai`): the lean OpenAI-protocol client (aiohttp), for providers that
  speak that protocol, where it sends exactly what litellm would.
* ``litellm`` (:mod:`.litellm`): ``litellm.acompletion``, the general path to every provider.

:func:`choose` picks the backend of a resolved model (``--defan-call-path``: ``auto``,
``litellm`` or ``openai``) and says why; :func:`make_caller` builds its caller;
:func:`check_name` says whether some backend can call a ``--defan-model`` name.  A plugin adds a
backend with one registry entry (``BACKENDS.register(MyBackend())``, or an entry point
``backend.<name>`` in the ``defan_pytest`` group); the ``pytest_defan_backend`` hook lets a
plugin pick the backend of a run itself.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple, Union

from defan_pytest.calls.backends.callables import CALLABLE
from defan_pytest.calls.backends.litellm import LITELLM
from defan_pytest.calls.backends.litellm_model import address_problem
from defan_pytest.calls.backends.openai import OPENAI
from defan_pytest.calls.models import LitellmModel, registered
from defan_pytest.calls.protocol import CALL_PATHS, DEFAULT_TIMEOUT, Backend, Caller
from defan_pytest.registry import Registry

__all__ = ["BACKENDS", "BUILT_IN", "check_name", "choose", "make_caller"]

_METHODS = ("knows", "serves", "caller", "classify")


def _check(entry: Any) -> Union[bool, str]:
    if isinstance(entry, type):
        return "a class, not a backend: register an instance"
    missing = [m for m in _METHODS if not callable(getattr(entry, m, None))]
    if missing:
        return f"not a model backend (no {', '.join(missing)}: see defan_pytest.calls.protocol.Backend)"
    return True


#: Every model backend by name: the built-in ones, then those plugins registered.
BACKENDS: Registry[Backend] = Registry("model backend", _check, entry_point_prefix="backend")
#: The built-in backends, in the order :func:`choose` asks them (litellm, the general path, last).
BUILT_IN: Tuple[str, ...] = tuple(BACKENDS.register(b).name for b in (CALLABLE, OPENAI, LITELLM))
BACKENDS.seal_built_ins()


def _in_order() -> List[Backend]:
    """The backends plugins added, in the order they were registered, then the built-in ones:
    a plugin's backend takes the models it serves before litellm takes any model string."""
    added = [b for b in BACKENDS.values() if b.name not in BUILT_IN]
    return added + [BACKENDS.get(name) for name in BUILT_IN]


def choose(model: Any, call_path: str = "auto", timeout: float = DEFAULT_TIMEOUT,
           picked: Optional[Backend] = None) -> Tuple[Backend, str]:
    """The backend that calls the resolved ``model`` under ``--defan-call-path=call_path``, and
    why: ``picked`` (the backend a plugin's ``pytest_defan_backend`` hook returned), else the
    first that serves it of the backends plugins added (in the order they were registered) and
    then the built-in ones (:data:`BUILT_IN`).  Raises ``ValueError`` for an unknown call path, a
    call path that cannot call ``model`` (``openai`` for a provider that speaks another
    protocol), a model string whose ``api_base`` cannot be used (user info in it), or a model
    no backend serves."""
    if call_path not in CALL_PATHS:
        raise ValueError(f"{call_path!r} is not one of: {', '.join(CALL_PATHS)}")
    problem = address_problem(model.params) if isinstance(model, LitellmModel) else None
    if problem is not None:
        raise ValueError(problem)
    if picked is not None:
        return picked, f"picked by a plugin (pytest_defan_backend: {picked.name!r})"
    declined = ""
    for backend in _in_order():
        takes, why = backend.serves(model, call_path, timeout)
        if takes:
            return backend, why or declined
        declined = why
    raise ValueError(f"no model backend calls {model!r} (backends: {', '.join(BACKENDS.names())})")


def make_caller(model: Any, timeout: float, path: str = "auto") -> Caller:
    """The caller of a resolved model (``path``: ``--defan-call-path``), made by the backend
    :func:`choose` picks."""
    backend, _why = choose(model, path, timeout)
    return backend.caller(model, timeout)


def check_name(name: str, tables: Mapping[str, Mapping[str, Any]]) -> Optional[str]:
    """A problem with the model name, or ``None`` when it can be called: a registered callable,
    a configured ``[models.<name>]`` table, or a name a backend knows (a litellm model string)."""
    if name in tables or any(b.knows(name) for b in BACKENDS.values()):
        return None
    functions = registered()
    known = sorted(functions) + sorted(t for t in tables if t not in functions)
    listed = ", ".join(known) if known else "none"
    return (
        f"unknown model {name!r}: not a registered model (registered or configured: {listed}) "
        "and not a litellm model string such as 'openai/gpt-4o-mini' (PROVIDER/MODEL)"
    )
