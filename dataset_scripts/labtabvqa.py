"""Build the labtabvqa task: raw MERA folder -> Hub dataset folder (Parquet + card).

    python dataset_scripts/labtabvqa.py --raw RAW_DIR --output-dir OUT_DIR [--push ORG/NAME]

The same as `mera-multi build labtabvqa ...` (every option of `mera-multi build --help`); the
builder is mera_multi_hf/data/builders/labtabvqa.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["build", "labtabvqa", *sys.argv[1:]]))
