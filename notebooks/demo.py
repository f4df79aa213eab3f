# %%
# The lecture demo: `python -m attention_lab demo` serves this notebook with Voila, which shows its
# outputs and never its code. One tab per explorer, in presentation mode (large type and figures
# for a projector); the button above the tabs puts every control back to its starting value.
# The trained model's tab is built when a viewer first opens it, with the model the launcher
# shares between all viewers (`shared_model()`; None outside the demo: the explorer loads its own).
from attention_lab.demo import build_demo, later, shared_model
from attention_lab.toy.explorer import ModelExplorer
from attention_lab.widgets import (MaskExplorer, QueryExplorer, ScoreExplorer,
                                   TemperatureExplorer, WindowExplorer)

demo = build_demo({
    "Query": QueryExplorer(presentation=True),
    "Temperature": TemperatureExplorer(presentation=True),
    "Mask": MaskExplorer(presentation=True),
    "Window": WindowExplorer(presentation=True),
    "Score": ScoreExplorer(presentation=True),
    "Trained model": later(lambda: ModelExplorer(model=shared_model(), presentation=True)),
})
demo
