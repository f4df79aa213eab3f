# %%
# The lecture demo: `python -m attention_lab demo` serves this notebook with Voila, which shows its
# outputs and never its code. One tab per explorer; the button under the tabs puts every control
# back to its starting value.
#
# Provisional tabs built from the core only; each line becomes one of attention_lab.widgets'
# explorers, e.g. "Query": QueryExplorer(presentation=True).
from attention_lab._standin import WeightsExplorer
from attention_lab.demo import build_demo

demo = build_demo({
    "Query": WeightsExplorer(("query", "score"), presentation=True),
    "Temperature": WeightsExplorer(("temperature",), presentation=True),
    "Mask": WeightsExplorer(("mask",), presentation=True),
})
demo
