"""The bundled samples as a source kind: ``--data sample`` reads each task's shipped raw
sample folder (:func:`.sample_data.bundled_sample`), registered as any package's data
would be (:mod:`mera_multi_hf.data.sources` imports this module by name)."""

from __future__ import annotations

from mera_multi_hf.data.sources import register_source_kind

SAMPLE = "sample"


def _bundled(task):
    from mera_multi_hf.demo.sample_data import bundled_sample

    return bundled_sample(task.key)  # a task without one is a MeraError naming those with one


register_source_kind(SAMPLE, _bundled, about="the bundled sample", says_notes=False)
