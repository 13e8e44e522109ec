"""reporting: one consistent set of outputs from a scored run.

Owns the write stage (:mod:`.outputs`: every file of a run rendered from its typed
records, then written as one set by :func:`.reports.write_outputs`), the sample files
(:mod:`.samples`), the reports and the chart, the HTML pages and their templates
(``templates/``), compare, the leaderboard table and the submission packer. It decides
nothing: scores, privacy and the run record come in the records it is handed.

May import: core, tasks, data (the pages' media only), scoring, generation; never judge
(pyproject's ``reporting-renders`` contract).
"""
