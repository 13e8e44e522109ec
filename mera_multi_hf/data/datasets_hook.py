"""The one private hook into `datasets`: a Dataset's fingerprint and its indices.

`datasets` gives every Dataset a fingerprint (the hash chain of its data files and of
each transform since), and records it as ``Dataset._fingerprint``; no public attribute
or function returns it (``datasets.fingerprint.generate_fingerprint`` makes a new one
from a Dataset's state, which is not the one a transformed Dataset carries). A run and
`score` record it as results.json's ``dataset_fingerprint``, so it must be the very one
`datasets` gave. Tested against the installed `datasets` in tests/test_library_hooks.py;
pyproject.toml's `datasets` range covers only the versions it was tested on.

A Dataset under other feature labels on the same Arrow data (no copy, unlike
``Dataset.cast``) is made with the constructor, which takes the indices mapping that only
``Dataset._indices`` holds.
"""

from __future__ import annotations


def fingerprint(ds) -> str:
    """The fingerprint `datasets` gave the Dataset ``ds``."""
    return ds._fingerprint


def relabelled(ds, features):
    """``ds`` under other features (media decode flags) on the very same Arrow data and
    indices, with a fingerprint derived from its own."""
    import copy

    import datasets
    from datasets.fingerprint import Hasher

    info = copy.deepcopy(ds.info)
    info.features = features
    return datasets.Dataset(
        ds.data,
        info=info,
        split=ds.split,
        indices_table=ds._indices,
        fingerprint=Hasher.hash([fingerprint(ds), "loaded media labels"]),
    )
