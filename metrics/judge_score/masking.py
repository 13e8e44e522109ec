"""Secrets masked in whatever is recorded or printed. Its own small module so that the
judge metric's Space carries it as a sibling file (judge errors are masked there too)."""
from __future__ import annotations

import re

# Query parameters whose values are credentials (?token=, &api_key=, &sig=, ...).
_SECRET_QUERY = re.compile(r"([?&;][^=&#\s]*(?:token|key|sig|pass|secret|auth|credential)"
                           r"[^=&#\s]*=)[^&#\s'\"]+", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """``text`` with secrets masked: the values of API key and token options, the user
    name and password of every URL, and secret-looking query values (token, key,
    api_key, access_token, sig, password, ...). The one masking helper: whatever is
    recorded (results, logs, cards) or printed (errors) goes through it."""
    text = re.sub(r"(--(?:judge-)?api[-_]key[= ]|--token[= ])\S+", r"\1***", text)
    text = re.sub(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@", r"\1***@", text)
    return _SECRET_QUERY.sub(r"\1***", text)
