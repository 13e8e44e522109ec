"""How to cite the benchmark (one text: dataset cards, builders and the metric modules,
which carry a copy of this file)."""

CITATION = """\
@misc{mera_multi_2025,
  title  = {MERA Multi: Multimodal Evaluation for Russian-language Architectures},
  author = {{MERA Team}},
  year   = {2025},
  url    = {https://mera.a-ai.ru/en/multi}
}
"""
