"""demo: what the quick start and the tests run without a network.

Owns the built-in tiny models (a random LLaVA and Qwen2-Audio, the tiny judge, family
recipes; built offline from templates and cached), the sample generators and the bundled
samples (:mod:`.sample_data`, ``samples/``).

May import: core, tasks.
"""
