"""Each built-in task's exact-match options (normalisation mode, answer kind, option
letters), which the metric modules take from a task key (``evaluate.load(path, task)``
or ``compute(..., task=...)``). A Space has no task declarations: `mera-multi metrics
export` writes this table out, literally, as the Space's ``task_options.py``.
"""

# Written by `mera-multi metrics export` from the package's task declarations.
TASK_OPTIONS = {
    'ruhhh_image': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B']},
    'ruhhh_video': {'mode': 'strict', 'answer_kind': 'letter', 'choices': ['A', 'B']},
    'rucommonvqa': {'mode': 'mera', 'answer_kind': 'free', 'choices': None},
    'ruclevr': {'mode': 'mera', 'answer_kind': 'free', 'choices': None},
    'weird': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B']},
    'runaturalsciencevqa': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
    'labtabvqa': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D', 'E', 'F', 'G']},
    'realvqa': {'mode': 'mera', 'answer_kind': 'free', 'choices': None},
    'rumathvqa': {'mode': 'mera', 'answer_kind': 'free', 'choices': None},
    'rutie_image': {'mode': 'strict', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D', 'А', 'Б', 'В', 'Г']},
    'schoolsciencevqa': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
    'unisciencevqa': {'mode': 'mera', 'answer_kind': 'free', 'choices': None},
    'ruenvaqa': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
    'ruslun': {'mode': 'mera', 'answer_kind': 'json', 'choices': None},
    'aquaria': {'mode': 'mera', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
    'rutie_audio': {'mode': 'strict', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D', 'А', 'Б', 'В', 'Г']},
    'commonvideoqa': {'mode': 'strict', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
    'realvideoqa': {'mode': 'strict', 'answer_kind': 'letter', 'choices': ['A', 'B', 'C', 'D']},
}
