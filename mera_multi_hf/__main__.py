"""`python -m mera_multi_hf ...` (and `accelerate launch -m mera_multi_hf ...`)."""

import sys

from mera_multi_hf.cli.main import main

sys.exit(main())
