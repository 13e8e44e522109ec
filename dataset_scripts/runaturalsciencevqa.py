"""ruNaturalScienceVQA: school natural-science questions with a picture, an optional
``context`` text and options A-D; four domain configs on the Hub.

Domains. The Hub publishes one config per domain; the loader joins them and writes the
config name into ``meta.domain``. A raw folder is either the official per-domain layout
(``<domain>/test.json``, ``<domain>/shots.json``, as the upload notebook reads it; the
folder names the domain) or one test.json / shots.json whose records name their domain
in ``meta.domain`` or, as the official records of this task do, in
``meta.categories.domain``. An export writes one config per domain. Either way the dataset carries
``meta.domain`` (one of the task's domain configs), which reports break scores down by;
the task's exact match, the mean over all examples, is the size-weighted mean of the
domain scores, as the official group aggregation (``weight_by_size: true``) makes it.

:func:`with_domain` is shared by the other domain-split science tasks.
"""
import datasets

from mera_multi_hf.builder import MeraBuilder
from mera_multi_hf.raw import FieldError, domain_key
from mera_multi_hf.tasks import get_task

META_FEATURES = {
    "id": datasets.Value("int32"),
    "domain": datasets.Value("string"),
    "categories": {"domain": datasets.Value("string"), "subdomain": datasets.Value("string")},
}


def with_domain(meta: dict, domains: tuple[str, ...]) -> dict:
    """The meta with ``domain`` set to the task's name of the example's domain config
    ("Earth science", "earth_science" -> "earth_science"); a missing or unknown one
    is a problem in ``meta.domain``."""
    categories = meta.get("categories")
    named = meta.get("domain") or (categories.get("domain") if isinstance(categories, dict)
                                   else None)
    known = {domain_key(d): d for d in domains}
    key = domain_key(named)
    if key not in known:
        raise FieldError("meta.domain", f"{named!r:.80} is not one of {', '.join(domains)} "
                         "(each record names its domain in meta.domain)")
    return {**meta, "domain": known[key]}


def normalize_meta(meta: dict) -> dict:
    return with_domain(meta, get_task("runaturalsciencevqa").domains)


class RuNaturalScienceVQA(MeraBuilder):
    TASK_KEY = "runaturalsciencevqa"
    META_FEATURES = META_FEATURES
    normalize_meta = staticmethod(normalize_meta)
