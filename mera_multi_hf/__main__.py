"""`python -m mera_multi_hf ...` (and `accelerate launch -m mera_multi_hf ...`)."""
import sys

from .cli import main

sys.exit(main())
