"""Secrets of a run: found by name and by value, scrubbed from every text, hashed out of identities.

Every credential a run is given (an ``api_key``, a header, a nested parameter whose name looks
secret, a password in a URL) and every secret-looking environment variable is collected by
:func:`known_secrets`; :func:`redact` removes them (and known key shapes) from any text before it
reaches a message, a report or the cache; :func:`public_identity` is the cache identity of a
model with every credential dropped.  A URL is redacted whole (:func:`redact_url`): its user info
and every query value are secrets wherever it is written, whatever their names.  Nothing here
calls a model.
"""
from __future__ import annotations

import hashlib
import os
import re
import types
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set

_SECRET_PATTERNS = [
    re.compile(r"\b(?:sk|pk|rk|xai|gsk|hf)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|authorization|x-api-key)['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{6,}"),
]
# Words that make a parameter, header or nested key name a credential's (``api_key``,
# ``x-api-key``, ``Authorization``, ``aws_secret_access_key``, ``azure_ad_token``,
# ``vertex_credentials``, ``apiKey``) -- whole words, so ``max_tokens`` is not one.
_SECRET_WORDS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "auth", "authorization",
    "credential", "credentials", "cookie", "signature", "bearer",
})
# Environment variables: the same words, but not ``auth`` (SSH_AUTH_SOCK is a path), and never
# PWD/OLDPWD (the working directory).
_SECRET_ENV_WORDS = _SECRET_WORDS - {"auth"} | {"pat"}
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD"})
# A URL in a text: a scheme, then anything up to white space or a quote (not the punctuation
# that ends a sentence around it).
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,:;!?)\]]")
_AUTH_SCHEME = re.compile(r"(?i)^\s*(?:bearer|basic|token|bot|apikey|key|sharedaccesssignature)\s+(\S{4,})\s*$")
_TOKEN_LIKE = re.compile(r"^[A-Za-z0-9._~+/=:-]{16,}$")
#: Shorter values are not redacted by value (they would blank common words); they are still
#: kept out of the cache identity by their names.
MIN_SECRET = 6
#: The key given to an OpenAI-compatible server at ``api_base`` when the run has none: the
#: openai client refuses to send a request without one, and a local server needs none.
NO_KEY = "sk-no-key-required"


def _words(name: str) -> List[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


def secret_name(name: str) -> bool:
    """Whether a parameter, header or key called ``name`` holds a credential.

    >>> [secret_name(n) for n in ("api_key", "Authorization", "x-api-key", "apiKey", "max_tokens", "api_base")]
    [True, True, True, True, False, False]
    """
    return any(w in _SECRET_WORDS for w in _words(name))


def _secret_env_name(name: str) -> bool:
    if name in _NOT_SECRET_ENV:
        return False
    return any(w in _SECRET_ENV_WORDS for w in _words(name.replace("APIKEY", "API_KEY")))


def _token_like(value: str) -> bool:
    """A long run of token characters with letters and digits (not ``application/json``)."""
    v = value.strip()
    return bool(_TOKEN_LIKE.match(v)) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _add_secret(value: str, out: Set[str]) -> None:
    value = value.strip()
    if len(value) >= MIN_SECRET:
        out.add(value)
    m = _AUTH_SCHEME.match(value)
    if m and len(m.group(1)) >= MIN_SECRET:
        out.add(m.group(1))  # "Bearer KEY": the key alone may be what a message quotes


def _url_secrets(value: str, out: Set[str], standalone_user: bool = True) -> None:
    """The secrets of a URL worth finding by value elsewhere too: its password, a user name
    that stands alone (``https://TOKEN@host``; not in the environment, where it is more often
    a login name) or looks like a token, query values that are
    secret by name or look like tokens.  (The URL itself is redacted whole by
    :func:`redact_url`; a short or plain value is not hunted in every text, where it would
    blank common words and dates.)"""
    if "://" not in value:
        return
    try:
        parts = urllib.parse.urlsplit(value)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        _add_secret(password, out)
    if user and ((standalone_user and not password) or _token_like(user)):
        _add_secret(urllib.parse.unquote(user), out)
    for k, v in urllib.parse.parse_qsl(parts.query):
        if secret_name(k) or _token_like(v):
            _add_secret(v, out)


def redact_url(url: str) -> str:
    """``url`` with its user info, every query value and its fragment replaced by ``***``;
    a URL with none of them is returned as it is.

    >>> redact_url("https://tok:pw@example.com/v1?sig=abc&code=42#frag")
    'https://***@example.com/v1?sig=***&code=***#***'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # not even parseable (a bad port, an unclosed bracket): keep no part of it
        return url.split("://", 1)[0] + "://***"
    netloc = parts.netloc
    if "@" not in netloc and not parts.query and not parts.fragment:
        return url
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join((p.split("=", 1)[0] + "=***") if "=" in p else ("***" if p else p) for p in parts.query.split("&"))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, "***" if parts.fragment else ""))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it redacted whole (:func:`redact_url`)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def user_info(url: Any) -> bool:
    """Whether ``url`` carries user info (a name or password before ``@``)."""
    if not isinstance(url, str) or "://" not in url:
        return False
    try:
        return "@" in urllib.parse.urlsplit(url.strip()).netloc
    except ValueError:
        return False


def _walk_secrets(value: Any, secret: bool, header: bool, out: Set[str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            name = str(k)
            _walk_secrets(v, secret or secret_name(name), header or name in ("headers", "extra_headers"), out)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _walk_secrets(v, secret, header, out)
    elif isinstance(value, str):
        if secret or (header and _token_like(value)):
            # A header value shaped like a token is taken for one, whatever the header's name.
            _add_secret(value, out)
        else:
            _url_secrets(value, out)
    elif secret and value is not None and not isinstance(value, (bool, int, float)):
        _add_secret(str(value), out)


def known_secrets(
    params: Mapping[str, Any] = types.MappingProxyType({}), environ: Optional[Mapping[str, str]] = None,
) -> List[str]:
    """Every secret value a run was given, longest first: credentials anywhere in the call
    parameters (``api_key``, ``headers`` and ``extra_headers``, any name that looks secret,
    nested values too, passwords in URLs) and the values of secret-looking environment
    variables (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``AZURE_*_KEY``, ``*_PASSWORD``, ...)."""
    found: Set[str] = set()
    _walk_secrets(dict(params), False, False, found)
    env = os.environ if environ is None else environ
    for k, v in env.items():
        v = v.strip()
        # Short or plain-word values ("1", "true", "disabled") are settings, not secrets.
        if _secret_env_name(k) and len(v) >= 8 and (len(v) >= 16 or not v.isalpha()):
            found.add(v)
        elif "://" in v:
            _url_secrets(v, found, standalone_user=False)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every known secret replaced by ``***`` (by value only)."""
    for s in secrets:
        if s and s in text:
            text = text.replace(s, "***")
    return text


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every known secret, anything shaped like a key and the secret parts of
    every URL (:func:`redact_url`) replaced by ``***``."""
    text = scrub(redact_urls(text), secrets)
    for pat in _SECRET_PATTERNS:
        text = pat.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(repr(value).encode("utf-8", "backslashreplace")).hexdigest()[:16]


def _public(value: Any, secrets: Sequence[str], header: bool = False, hide: bool = False) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            name = str(k)
            if secret_name(name):
                continue  # a credential: not part of what shapes an answer
            if name in ("headers", "extra_headers") and isinstance(v, Mapping):
                kept = _public(v, secrets, header=True, hide=hide)
                if kept:
                    out[name] = kept
                continue
            out[name] = ("***" if hide else _digest(v)) if header else _public(v, secrets, hide=hide)
        return out
    if isinstance(value, (list, tuple)):
        return [_public(v, secrets, hide=hide) for v in value]
    if isinstance(value, str):
        return scrub(redact_urls(value), secrets)
    return value


def public_identity(
    params: Mapping[str, Any], secrets: Sequence[str] = (), hide_headers: bool = False
) -> Dict[str, Any]:
    """The call parameters as they enter a cache identity: without any credential, so that no
    key is ever stored and a new key reuses the old key's answers.

    A parameter (or nested key) whose name looks secret is dropped; of ``headers`` and
    ``extra_headers`` only the headers that are not credentials count, each by a digest of its
    value (never the value) in a cache identity, or as ``***`` with ``hide_headers`` (what a
    report writes: docs/secrets.md; a short unsalted digest of a guessable value is no
    secret); any known secret left in a value is replaced by ``***``.
    """
    return _public({k: v for k, v in params.items()}, secrets, hide=hide_headers)  # type: ignore[no-any-return]
