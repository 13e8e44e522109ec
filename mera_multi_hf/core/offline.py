"""Whether the Hub can be reached, asked once per process.

Offline (``HF_HUB_OFFLINE`` set, or one quick request to the Hub endpoint failing), the
process switches the Hub libraries to offline mode: what is in the local cache still
loads, and anything else fails at once instead of after a minute of retries. Callers
then refuse in one line naming the source and the offline alternative.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mera_multi_hf.core.errors import MeraError

_STATE: dict = {}


def offline_reason(probe_timeout: float = 5.0) -> str | None:
    """Why the Hub is out of reach (None when it answers). The first call may send one
    HEAD request to the Hub endpoint; its answer holds for the rest of the process."""
    if "reason" in _STATE:
        return _STATE["reason"]
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        reason = "HF_HUB_OFFLINE is set"
    else:
        reason = _probe(constants.ENDPOINT, probe_timeout)
    if reason:
        go_offline()
    _STATE["reason"] = reason
    return reason


def _probe(endpoint: str, timeout: float) -> str | None:
    from mera_multi_hf.core.http_client import Client, RequestFailed

    try:  # any answer, a redirect too, says the Hub is there
        Client(timeout).request("HEAD", endpoint)
    except RequestFailed as err:
        return f"no connection to {endpoint} ({err.problem})"
    return None


def go_offline() -> None:
    """Offline mode for huggingface_hub, datasets and transformers in this process (and
    the processes it starts): cached files load, nothing waits on the network."""
    import huggingface_hub.constants as hub_constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ[name] = "1"
    hub_constants.HF_HUB_OFFLINE = True
    datasets_config = sys.modules.get("datasets.config")  # (read at its import where not yet)
    if datasets_config is not None:
        datasets_config.HF_HUB_OFFLINE = datasets_config.HF_DATASETS_OFFLINE = True


def in_hub_cache(repo_id: str, repo_type: str = "model") -> bool:
    """Whether the local Hub cache holds a snapshot of this repository (any revision)."""
    from huggingface_hub import constants

    return (repo_type, repo_id) in _cached_repos(constants.HF_HUB_CACHE)


def _cached_repos(folder: str) -> frozenset:
    """(repo type, repo id) of every repository with a snapshot in the Hub cache
    ``folder``, as huggingface_hub's own scan reads them. Scanned once per process and
    folder: a scan reads every repository's files, and offline (the only time it is
    asked) nothing is added to the cache."""
    from huggingface_hub import scan_cache_dir

    if ("cache", folder) not in _STATE:
        try:
            repos = scan_cache_dir(folder).repos if os.path.isdir(folder) else ()
        except OSError:  # an unreadable cache: nothing in it can be loaded either
            repos = ()
        _STATE["cache", folder] = frozenset((r.repo_type, r.repo_id) for r in repos if r.revisions)
    return _STATE["cache", folder]


def did_you_mean(name: str, candidates) -> str:
    """' (did you mean X?)' for a close candidate, else ''."""
    import difflib  # (a mistake's: a run that goes well never needs it)

    close = difflib.get_close_matches(name, list(candidates), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def nearby_names(source: str) -> list[str]:
    """The folder names next to where ``source`` points (for a typo)."""
    path = Path(source).expanduser()
    parent = path.parent if str(path.parent) not in ("", ".") else Path(".")
    prefix = "" if parent == Path(".") else str(parent).rstrip("/") + "/"
    try:
        return [prefix + p.name for p in parent.iterdir() if p.is_dir()]
    except OSError:
        return []


# What a preflight asks of the Hub and of a server (pipeline/preflight.py runs the checks)

PROBE_TIMEOUT = 10.0


def check_hub_model(name: str, what: str, flag: str, alternative: str) -> str:
    """A local folder, or a Hub id that is reachable or in the local cache."""
    path = Path(name).expanduser()
    if path.is_dir():
        return f"local folder {path}"
    if path.exists():
        raise MeraError(f"{flag} {name} is not a {what} folder: it is a file (give {alternative})")
    # a path as typed, or one under a folder that is here (runs/model), is a local path
    if (
        name.startswith((".", "/", "~"))
        or name.count("/") > 1
        or "/" in name
        and path.parent.is_dir()
    ):
        raise MeraError(
            f"{flag} {name} is not a {what} folder: it is a local path that does not exist"
        )
    reason = offline_reason()
    if reason is None:
        return f"Hub id {name} (online)"
    if in_hub_cache(name, "model"):
        return f"Hub id {name} (offline: from the local cache)"
    raise MeraError(
        f"cannot load {what} {name!r}: no folder of that name is here, and as a Hub "
        f"id it is out of reach ({reason}) and not in the local cache: pass "
        f"{alternative}, or run where the Hub answers"
    )


def probe(url: str, api_key: str | None, timeout: float = PROBE_TIMEOUT):
    """One GET (no retries) through the one HTTP client, ``timeout`` its whole deadline:
    (status, JSON or None); MeraError when nothing answers."""
    from mera_multi_hf.core import json_read
    from mera_multi_hf.core.http_client import Client, RequestFailed
    from mera_multi_hf.core.masking import mask_secrets

    try:
        resp = Client(timeout, api_key=api_key).get(url)
    except RequestFailed as err:
        raise MeraError(
            f"{mask_secrets(url)} {err.problem}; is the server running and the URL right?"
        ) from None
    try:
        body = json_read.loads(resp.content, url)
    except json_read.JsonReadError:
        body = None
    return resp.status, body


def refused(url: str, status: int, key_flag: str, env: str) -> str:
    if status in (401, 403):  # the flag last: masking eats the word after a key flag
        return (
            f"{url} refused the request with HTTP {status} (authentication): set the "
            f"right key in ${env} or give it with {key_flag}"
        )
    return f"{url} answered HTTP {status}"
