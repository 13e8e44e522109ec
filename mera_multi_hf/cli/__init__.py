"""cli: the ``mera-multi`` command line.

Owns the parser and the commands (:mod:`.main`; `evaluate`, `score`, `view` and `judge`
in modules of their own). Every user mistake ends as one ``mera-multi: error:`` line.

May import: every stage.
"""
