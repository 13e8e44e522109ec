"""Accuracy, Cohen's kappa and confusion matrix of a judge against human labels.

    python judge_model/agreement.py --data labelled.jsonl --model PATH [--out report.json]

The same as `mera-multi judge agreement ...` (every option of its --help); the code is
mera_multi_hf/judge_agreement.py.
"""

import sys

from mera_multi_hf.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["judge", "agreement", *sys.argv[1:]]))
