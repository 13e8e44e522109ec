"""Read and check a dataset folder in the raw MERA layout (docs/official-protocol.md,
"Raw data layout and group ids"), one job per module:

- ``files``: safe reading of one file inside the folder, under a size limit;
- ``json_files``: JSON parsing with depth, repeated-key and text checks;
- ``layout``: file names and the per-domain folder layout;
- ``metadata``: excluded fields and computed fields of the metadata file;
- ``card``: card-field shapes and readme filling;
- ``groups``: group-id derivation (the only place it happens);
- ``records``: the checks of one record (prompt placeholders come from ``prompts``);
- ``dataset``: :class:`RawDataset`, which walks the folder with them.
"""

from mera_multi_hf.data.raw.card import CARD_FIELD_TYPES, card_meta_problems, fill_readme
from mera_multi_hf.data.raw.dataset import RawDataset
from mera_multi_hf.data.raw.files import (
    MAX_JSON_BYTES,
    MAX_MEDIA_BYTES,
    FieldError,
    forget_resolved_paths,
    read_inside,
)
from mera_multi_hf.data.raw.groups import GroupIds
from mera_multi_hf.data.raw.json_files import (
    MAX_JSON_DEPTH,
    json_depth,
    parse_json,
    parse_json_doubtful,
    read_json,
)
from mera_multi_hf.data.raw.layout import (
    META_FILES,
    README_FILES,
    SPLITS,
    RawPart,
    domain_folders,
    domain_key,
    named_domain,
    record_domain,
)
from mera_multi_hf.data.raw.metadata import compute_field, drop_fields, exclusion_paths
from mera_multi_hf.data.raw.records import json_gold

__all__ = [
    "CARD_FIELD_TYPES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MEDIA_BYTES",
    "META_FILES",
    "README_FILES",
    "SPLITS",
    "FieldError",
    "GroupIds",
    "RawDataset",
    "RawPart",
    "card_meta_problems",
    "compute_field",
    "domain_folders",
    "domain_key",
    "drop_fields",
    "exclusion_paths",
    "fill_readme",
    "forget_resolved_paths",
    "json_depth",
    "json_gold",
    "named_domain",
    "parse_json",
    "parse_json_doubtful",
    "read_inside",
    "read_json",
    "record_domain",
]
