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

The domain rule is the generic one of every domain-split task
(``mera_multi_hf.data.builder.with_domain``).
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "domain": datasets.Value("string"),
    "categories": {"domain": datasets.Value("string"), "subdomain": datasets.Value("string")},
}


class RuNaturalScienceVQA(MeraBuilder):
    TASK_KEY = "runaturalsciencevqa"
    META_FEATURES = META_FEATURES
