"""serving: the package's HTTP servers.

Owns the shared app (bounds, deadlines, JSON errors: :mod:`.app`), the OpenAI-compatible
chat server over the hf backend (:mod:`.chat_server`; its requests: :mod:`.chat_requests`),
the judge server (:mod:`.judge_server`) and the options every server takes.

May import: core, tasks, data, judge, scoring, generation, reporting.
"""
