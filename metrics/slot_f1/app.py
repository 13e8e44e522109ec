"""The Hugging Face Space entry point: a Gradio form over this folder's metric.

(evaluate's own `launch_gradio_widget` is written for Gradio 3 and fails on the Gradio of
the card's `sdk_version`, so the form is built here.)
"""

import json
from pathlib import Path

import evaluate
import gradio as gr

module = evaluate.load(str(Path(__file__).resolve().parent))
features = module.features[0] if isinstance(module.features, list) else module.features
columns = list(features)


def _cell(name: str, value):
    kind = getattr(features[name], "dtype", "string")
    return (
        int(value)
        if kind.startswith("int")
        else float(value)
        if kind.startswith("float")
        else str(value)
    )


def compute(table, options: str = "{}"):
    """The metric over the table's rows (one column per input), with the JSON options."""
    rows = table.values.tolist() if hasattr(table, "values") else table
    inputs = {name: [_cell(name, row[i]) for row in rows] for i, name in enumerate(columns)}
    return module.compute(**inputs, **json.loads(options or "{}"))


demo = gr.Interface(
    fn=compute,
    inputs=[
        gr.Dataframe(
            headers=columns,
            datatype=["str"] * len(columns),
            row_count=2,
            col_count=(len(columns), "fixed"),
            label="one row per example",
        ),
        gr.Textbox(value="{}", label='options (JSON), e.g. {"mode": "strict"}'),
    ],
    outputs=gr.JSON(label="result"),
    title=f"MERA Multi: {module.name}",
    description=module.info.description,
)

if __name__ == "__main__":
    demo.launch()
