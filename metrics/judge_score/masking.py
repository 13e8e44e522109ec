"""Secrets masked in whatever is recorded or printed. Its own small module so that the
judge metric's Space carries it as a sibling file (judge errors are masked there too).

The run knows its secrets by value (a process-wide registry): the options declared
secret, the environment variables of :data:`SECRET_ENV`, the password, fragment and
secret-looking query values of every URL it was given, and the secret-looking values of
``key=value`` lists. :func:`mask_secrets` replaces each one, plain, JSON-escaped,
HTML-escaped and percent-encoded; the patterns after it catch what the run was not told.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings

MIN_SECRET = 6  # shorter values are not treated as secrets (they would mask ordinary text)
MASK = "***"
# environment variables whose values are credentials, whichever command reads them
SECRET_ENV = (
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "MERA_JUDGE_API_KEY",
    "MERA_SERVE_API_KEY",
)
# names (of query parameters, key=value entries) whose values are credentials
SECRET_NAME = re.compile(
    r"token|key|sig|pass|pwd|secret|auth|session|jwt|code|credential", re.IGNORECASE
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s,'\"<>]+")
# a URL's user information up to its "@", commas included (a list of URLs is split on
# commas after this has seen it whole)
_URL_USER_INFO = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://([^\s/@'\"<>]+)@")
# a config's key (at any depth) whose value is a credential: an option named like one,
# and the HTTP headers that carry one
SECRET_KEY = re.compile(
    r"(?:^|[_-])(?:api[_-]?key|key|token|secret|password|passwd|auth|credentials?|sig)$"
    r"|^(?:proxy-)?authorization$|^(?:set-)?cookie$",
    re.IGNORECASE,
)
# an HTTP header written out in text (a config's string, a repr): its value, the scheme
# word (Bearer, Basic) with it; a placeholder
# ("Bearer <key>", "Bearer KEY", in a help text) is not one
_PLACEHOLDER = r"(?-i:<|[A-Z][A-Z_]{0,30}(?![\w.-]))"  # (upper case, whatever the flags)
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|(?:set-)?cookie|x-api-key|api-key)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?)(?!(?:(?:bearer|basic|token|digest)\s+)?" + _PLACEHOLDER + r")"
    r"((?:bearer|basic|token|digest)\s+)?[^\s\"'\\,;}]+"
)
# an option's metavar in --help's usage ("[--api-key KEY]"): a word, never a key
_METAVAR = r"[A-Z][A-Z_]{0,30}(?:\]|\s|$)"
_PAIR = re.compile(r"([A-Za-z_][\w.%-]*)=([^,;&\s'\"]+)")
# a parameter's name is a word (a data URI's ";base64,..." is not one)
_QUERY = re.compile(r"([?&;])([\w.%\[\]-]*)=([^&#\s'\"<>]+)")
# both start at "://", a literal that is searched fast (a page of base64 media has none)
_USER_INFO = re.compile(r"(://)[^/\s@]+@")
_FRAGMENT = re.compile(r"(://[^\s#'\"<>]*#)[^\s'\"<>]+")

_known: set[str] = set()
_forms: list[re.Pattern] = []  # one pattern: every spelling of every known value, longest first


def remember(value) -> None:
    """Treat ``value`` (and its percent-decoded spelling) as a secret from now on."""
    if not isinstance(value, str):
        return
    new = {v for v in _forms_of(value) if len(v.strip()) >= MIN_SECRET} - _known
    if new:
        _known.update(new)
        spellings = sorted({form for v in _known for form in _spellings(v)}, key=len, reverse=True)
        _forms[:] = [re.compile("|".join(map(re.escape, spellings)))]


def _forms_of(value: str) -> set[str]:
    """The forms a secret takes: as given, stripped of surrounding spaces (a server
    echoes it stripped), percent-decoded, and each comma-separated part (the tool
    splits some values, --base-url's URLs, on commas)."""
    from urllib.parse import unquote  # here (and below): a command without secrets never needs it

    forms = {value, unquote(value)}
    forms |= {v.strip() for v in forms}
    forms |= {part.strip() for v in forms if "," in v for part in v.split(",")}
    return forms


def _spellings(value: str) -> set[str]:
    import html  # here: every command starts by loading this module
    import json
    from urllib.parse import quote, quote_plus

    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        html.escape(value),
        quote(value, safe=""),
        quote_plus(value, safe=""),
    }


def remember_text(text) -> None:
    """The secrets inside an option's value: every URL's password, fragment and
    secret-looking query values; secret-looking ``key=value`` entries (lm-eval's
    ``model_args``)."""
    if not isinstance(text, str):
        return
    from urllib.parse import urlsplit

    for user_info in _URL_USER_INFO.findall(text):
        remember(user_info.partition(":")[2])
    for url in _URL.findall(text):
        parts = urlsplit(url)
        remember(parts.password)
        remember(parts.fragment)
        _remember_pairs(parts.query)
        _remember_pairs(parts.fragment)
    _remember_pairs(text)


def _remember_pairs(text: str) -> None:
    from urllib.parse import unquote

    for name, value in _PAIR.findall(text):
        if SECRET_NAME.search(unquote(name)):
            remember(value)


def remember_environment() -> None:
    for name in SECRET_ENV:
        remember(os.environ.get(name))


def remember_options(options) -> None:
    """The secrets of an options dataclass: fields marked ``secret`` in their metadata
    whole, every other string for the URLs and lists it holds; and the environment's."""
    import dataclasses

    remember_environment()
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if field.metadata.get("secret"):
                remember(item)
            remember_text(item)


def holds_secret(data: str | bytes) -> bool:
    """Whether ``data`` holds a known secret in any spelling (stored prompts and
    generations are data, never rewritten: a caller reports this instead)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return any(form.search(text) for form in _forms)


def _query_value(match: re.Match) -> str:
    from urllib.parse import unquote

    lead, name, value = match.groups()
    return f"{lead}{name}={MASK}" if SECRET_NAME.search(unquote(name)) else match.group(0)


def _header_value(match: re.Match) -> str:
    return f"{match.group(1)}{match.group(2)}{MASK}"


def mask_values(value):
    """A foreign config block (lm-evaluation-harness's, say) with its secrets masked at
    any depth: a value under a secret key (an API key option, an ``Authorization``,
    ``x-api-key`` or cookie header), a secret ``name=value`` pair of a comma-separated
    argument string (``model_args``), and what mask_secrets masks in other strings."""
    if isinstance(value, dict):
        return {
            k: MASK if SECRET_KEY.search(str(k).strip()) and v else mask_values(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_values(v) for v in value]
    if isinstance(value, str):
        pairs = [
            (k, sep, MASK if sep and SECRET_KEY.search(k.strip()) else v)
            for k, sep, v in (part.partition("=") for part in value.split(","))
        ]
        return mask_secrets(",".join(k + sep + v for k, sep, v in pairs))
    return value


def mask_secrets(text: str) -> str:
    """``text`` with secrets masked: every known value (see the module docstring), then
    the values of API key and token options, the user name and password of every URL,
    its fragment and secret-looking query values (token, key, api_key, sig, pwd, ...,
    percent-escaped names too). The one masking helper: whatever is recorded (results,
    logs, cards) or printed (errors, the console) goes through it."""
    for form in _forms:
        text = form.sub(MASK, text)
    text = re.sub(
        rf"(--(?:judge-)?api[-_]key[= ]|--token[= ])(?!\()(?!{_METAVAR})\S+", r"\1***", text
    )
    lowered = text.lower()  # the header pattern is slow on pages of media: run where it may hit
    if any(word in lowered for word in ("authorization", "cookie", "api-key")):
        text = _HEADER.sub(_header_value, text)
    text = _USER_INFO.sub(r"\1***@", text)
    text = _FRAGMENT.sub(r"\1***", text)
    return _QUERY.sub(_query_value, text)


class MaskedStream:
    """A text stream (stdout, stderr) that masks whatever is written to it."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(mask_secrets(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _masked_record_factory(make):
    def factory(*args, **kwargs):
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call: logging reports it as it would
            return record
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[0] is not None:
            import traceback  # here: every command starts by loading this module

            record.exc_text = mask_secrets(
                "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            )
        return record

    factory.masked = True
    return factory


def excepthook(kind, value, tb) -> None:
    """sys.excepthook that masks the traceback it prints."""
    import traceback

    sys.stderr.write(mask_secrets("".join(traceback.format_exception(kind, value, tb))))


@contextlib.contextmanager
def masked_console(logs: bool = True):
    """stdout and stderr masked, with warnings, the excepthook and (``logs``) logging,
    until the block ends (a command's whole run; nested blocks wrap once). The command
    line masks logging apart, from where a command's work starts (:func:`masked_logs`):
    its --help then never loads the logging module."""
    saved = (sys.stdout, sys.stderr, sys.excepthook, warnings.showwarning)
    show = warnings.showwarning
    if not isinstance(sys.stdout, MaskedStream):
        sys.stdout = MaskedStream(sys.stdout)
    if not isinstance(sys.stderr, MaskedStream):
        sys.stderr = MaskedStream(sys.stderr)
    sys.excepthook = excepthook
    warnings.showwarning = lambda message, *rest, **kw: show(
        mask_secrets(str(message)), *rest, **kw
    )
    try:
        with masked_logs() if logs else contextlib.nullcontext():
            yield
    finally:
        sys.stdout, sys.stderr, sys.excepthook, warnings.showwarning = saved


@contextlib.contextmanager
def masked_logs():
    """Every log record made until the block ends masked (message and traceback)."""
    import logging

    saved = logging.getLogRecordFactory()
    if not getattr(saved, "masked", False):
        logging.setLogRecordFactory(_masked_record_factory(saved))
    try:
        yield
    finally:
        logging.setLogRecordFactory(saved)
