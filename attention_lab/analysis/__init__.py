"""The research level's measurements of any attention call: what it costs, what it does, and what
its weights do and do not explain (chapter, Level 4).

* :mod:`.cost`: the score matrix's shape, elements and bytes, the multiply-adds
  ``O(T S (D_k + D_v))``, and what streaming keeps instead (:class:`~.cost.AttentionCost`), and
  what caching the encoder's keys and values saves a decoder (:func:`~.cost.cache_cost`);
* :mod:`.audit`: the chapter's audit list for any attention callable plus its declared sources
  (:func:`~.audit.audit`); the trained toy model's audit is :func:`attention_lab.toy.audit.
  audit_model`;
* :mod:`.explain`: interventions on one attention read-out (replace a value, permute the weights,
  uniform weights, leave-one-out, gradient importance, Kendall's tau).

None of them imports torch at import time.
"""

from __future__ import annotations

from .cost import cache_cost

__all__ = ["cache_cost"]
