"""Serve a judge classifier with a vLLM-style /classify route.

    python judge_model/server.py --model PATH [--host 127.0.0.1] [--port 8000]
    MERA_JUDGE_MODEL=PATH uvicorn --factory judge_model.server:app_from_env --port 8000

The same as `mera-multi judge serve ...` (every option of `mera-multi judge serve --help`);
the server is mera_multi_hf/judge_server.py.
"""

import sys

from mera_multi_hf.cli.main import main
from mera_multi_hf.serving.judge_server import app_from_env  # noqa: F401 - for uvicorn --factory

if __name__ == "__main__":
    sys.exit(main(["judge", "serve", *sys.argv[1:]]))
