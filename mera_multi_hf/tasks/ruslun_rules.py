"""ruSLUn's declared rules, with no import: the task table and the ruSLUn metric both read
them (the task table sits below the metric code, so it may not import it)."""

RUSLUN_METRICS = ("intent_exact_match", "slot_f1")
# The corrected reading (case-insensitive on both sides): reported beside, never instead.
RUSLUN_CI_METRICS = ("intent_exact_match_ci", "slot_f1_ci")

# The official filter chain of ruSLUn, for callers that score raw generations.
RUSLUN_FILTERS = ("lowercase", "slot_clean")
