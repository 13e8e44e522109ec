"""spaces: the official metrics as ``evaluate`` modules.

Owns loading a metric (:func:`~.loading.load_metric`: the bundled Space folder, or the
Hub's) and ``mera-multi metrics export`` (each Space folder written flat, with only the
files its module imports).

May import: every stage up to serving.
"""
