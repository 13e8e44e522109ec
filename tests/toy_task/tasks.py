"""ToyColours, a made-up 19th task declared outside the package, as a contributor
declares one: this declaration, its builder (builders/toy_colours.py) and its raw sample
(samples/ToyColours/, the official raw layout). Nothing else names it.

    MERA_MULTI_TASKS=tests/toy_task/tasks.py mera-multi evaluate --tasks toy_colours
"""

from pathlib import Path

from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import register_task

HERE = Path(__file__).resolve().parent

TOY_COLOURS = register_task(
    TaskSpec(
        "toy_colours",
        "example/ToyColours",
        "ToyColours",
        "image",
        ("image",),
        ("question", "option_a", "option_b", "option_c"),
        "letter",
        ("exact_match", "group_exact_match"),
        choices=("A", "B", "C"),
        public=True,
        test_size=5,
        group_by=("image",),  # the same picture: one group (the raw data gives no group ids)
        cluster_by="group",
        breakdowns=(("shade", "shade"),),
        human_baseline={"exact_match": 1.0},
        builder=str(HERE / "builders" / "toy_colours.py"),
        sample=str(HERE / "samples" / "ToyColours"),
    )
)
