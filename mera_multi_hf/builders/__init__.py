"""One module per MERA Multi task: how its raw MERA folder becomes typed `datasets` splits.

Each module subclasses :class:`mera_multi_hf.builder.MeraBuilder` (the class whose
``TASK_KEY`` is the task's key), declares the task's ``meta`` features and normalises a
record's ``meta``; everything else comes from the task's declaration in
:mod:`mera_multi_hf.tasks`. ``hub.builder_class`` imports ``builders.<task key>``; a task
declared with ``builder=<file>`` (a task added outside the package) is read from that file.
The scripts in the checkout's dataset_scripts/ run `mera-multi build` for one task each.
"""
