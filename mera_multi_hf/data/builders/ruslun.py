"""ruSLUn: spoken language understanding. The gold ``outputs`` is a JSON object
{"intent": str, "slots": [{slot_type: value}, ...]} stored as a string, often with single
quotes (the official metric reads it as ``json.loads(outputs.replace("'", '"'))``).

The task card calls the test public, but the Hub copy's test answers are blanked: intent
EM and slot F1 can be computed locally only on a copy that has the answers (a raw folder
with them, or the shots split); otherwise the run writes the submission and says so.
"""

import datasets

from mera_multi_hf.data.builder import MeraBuilder

META_FEATURES = {
    "id": datasets.Value("int32"),
    "speaker": datasets.Value("string"),
}


class RuSLUn(MeraBuilder):
    TASK_KEY = "ruslun"
    META_FEATURES = META_FEATURES
