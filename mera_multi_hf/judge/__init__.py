"""judge: the learned answer judge.

Owns the client (a judge model in this process, or a served vLLM-style ``/classify``
route), the agreement report against human labels, and the training recipe. The servers
that serve a judge live in :mod:`mera_multi_hf.serving`.

May import: core, tasks.
"""
