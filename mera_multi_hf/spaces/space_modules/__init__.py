"""The sources of the metric Spaces: one `evaluate` module per Space (``<name>.py``, which
imports its logic from the package), its card (``cards/<name>.md``), its
``requirements/<name>.txt`` and the shared Gradio ``app.py``. They are never imported
here: `mera-multi metrics export` (:mod:`mera_multi_hf.spaces.export`) writes each Space
as one flat folder, the modules it imports beside it (:mod:`mera_multi_hf.spaces.flat_modules`).
"""
