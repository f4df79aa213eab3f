# %%
# The lecture demo: `python -m attention_lab demo` serves this notebook with Voila, which shows its
# outputs and never its code. One tab per explorer, in presentation mode (large type and figures
# for a projector); the button under the tabs puts every control back to its starting value.
from attention_lab.demo import build_demo
from attention_lab.toy.explorer import ModelExplorer
from attention_lab.widgets import (MaskExplorer, QueryExplorer, ScoreExplorer,
                                   TemperatureExplorer, WindowExplorer)

demo = build_demo({
    "Query": QueryExplorer(presentation=True),
    "Temperature": TemperatureExplorer(presentation=True),
    "Mask": MaskExplorer(presentation=True),
    "Window": WindowExplorer(presentation=True),
    "Score": ScoreExplorer(presentation=True),
    "Trained model": ModelExplorer(presentation=True),
})
demo
