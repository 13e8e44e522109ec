"""Train or fine-tune a judge on human-labelled answers (the recipe: transformers Trainer).

    python judge_model/train.py --data train.jsonl --base MERA-evaluation/MERA_Answer_judge --output-dir DIR

The same as `mera-multi judge train ...` (every option of its --help); the recipe is
mera_multi_hf/judge_train.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["judge", "train", *sys.argv[1:]]))
