"""reporting: one consistent set of outputs from a scored run.

Owns finalize (scores -> results.json, results.md, the chart, results.html, the
model-index block, submission.zip, written as one set), the reports and the chart, the
HTML pages and their templates (``templates/``), compare, the leaderboard table and the
submission packer.

May import: core, tasks, data, judge, scoring, generation.
"""
