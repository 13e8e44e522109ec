"""demo: what the quick start and the tests run without a network.

Owns the built-in tiny models (a random LLaVA and Qwen2-Audio, the tiny judge, family
recipes; built offline from templates and cached), the sample generators and the bundled
samples (:mod:`.sample_data`, ``samples/``).

It plugs into the stages as any user's model or data would: the bundled samples are the
source kind ``sample`` (:mod:`.source_kind`, in :mod:`mera_multi_hf.data.sources`), the
tiny models are model kinds (:mod:`.model_kinds`, in
:mod:`mera_multi_hf.generation.backends.model_kinds`). Those registries import the two
modules by name on their first lookup; no stage imports this package, which sits above
the stages it feeds.

May import: every stage up to spaces.
"""
