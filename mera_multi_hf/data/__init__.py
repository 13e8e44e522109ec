"""data: from a raw MERA folder or the Hub to typed examples.

Owns reading and checking raw folders (:mod:`.raw`), the builder base and the builders
of the 18 tasks (:mod:`.builders`), the Hub layout and its export and upload
(:mod:`.publish`, the card :mod:`.export_card`), loading a task from the Hub, a folder
or a registered source kind (:mod:`.loading`; what a source is and the registry of
source kinds, :mod:`.sources`; whose data it is, :mod:`.data_owner`; where a load is
cached, :mod:`.load_cache`), media decoding and the media checks, and
:class:`~.examples.Example`.

May import: core, tasks, judge, scoring (the metric registry: how a card describes a metric).
"""
