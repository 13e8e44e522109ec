"""Build the rutie_audio task: raw MERA folder -> Hub dataset folder (Parquet + card).

    python dataset_scripts/rutie_audio.py --raw RAW_DIR --output-dir OUT_DIR [--push ORG/NAME]

The same as `mera-multi build rutie_audio ...` (every option of `mera-multi build --help`); the
builder is mera_multi_hf/data/builders/rutie_audio.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["build", "rutie_audio", *sys.argv[1:]]))
