"""Build the rucommonvqa task: raw MERA folder -> Hub dataset folder (Parquet + card).

    python dataset_scripts/rucommonvqa.py --raw RAW_DIR --output-dir OUT_DIR [--push ORG/NAME]

The same as `mera-multi build rucommonvqa ...` (every option of `mera-multi build --help`); the
builder is mera_multi_hf/data/builders/rucommonvqa.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["build", "rucommonvqa", *sys.argv[1:]]))
