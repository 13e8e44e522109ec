"""Build the ruhhh_image task: raw MERA folder -> Hub dataset folder (Parquet + card).

    python dataset_scripts/ruhhh_image.py --raw RAW_DIR --output-dir OUT_DIR [--push ORG/NAME]

The same as `mera-multi build ruhhh_image ...` (every option of `mera-multi build --help`); the
builder is mera_multi_hf/data/builders/ruhhh_image.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["build", "ruhhh_image", *sys.argv[1:]]))
