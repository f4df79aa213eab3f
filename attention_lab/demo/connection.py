"""The demo page's watch on its kernel: a page whose kernel is gone says so and asks for a reload.

A viewer's kernel ends when the culler shuts it down (a laptop that slept past ``--cull-after``)
or when the demo is restarted; Voila's page shows nothing of it. Its sliders still move, but no
figure or readout follows: a stale page that looks live. :class:`ConnectionWatch` is an invisible
widget (``anywidget``) in the demo: after each action of the viewer (a click, a key, the end of a
drag) it asks the kernel for an answer, at most one question at a time; when none comes within
``patience`` seconds (or the question cannot be sent), it shows :data:`MESSAGE` over the demo,
until an answer comes after all. An idle page sends nothing. The patience (30 s) is far above the
slowest answer of a busy kernel (the trained model's tab opening on a loaded machine took over
10 s in this project's browser tests), so that a slow page is not told to reload.
"""

from __future__ import annotations

import anywidget
import traitlets

MESSAGE = ("This page has lost its connection to the demo (the demo was restarted, or this tab "
           "was idle too long), so the figures no longer follow the controls. Reload the page "
           "(F5, or pull down on a phone) to continue.")

_ESM = r"""
export default {
  render({ model, el }) {
    el.classList.add('al-lost');
    el.setAttribute('role', 'alert');
    el.textContent = model.get('message');
    el.hidden = true;
    let waiting = false;
    const lost = () => { el.hidden = false; };
    const ask = () => {
      if (waiting || !el.hidden) return;
      waiting = true;
      try { model.send({ ping: 1 }); } catch (e) { lost(); return; }
      setTimeout(() => { if (waiting) lost(); }, 1000 * model.get('patience'));
    };
    // an answer, however late (a busy kernel), takes the message away again
    model.on('msg:custom', () => { waiting = false; el.hidden = true; });
    const events = ['pointerup', 'keyup', 'change'];
    for (const type of events) document.addEventListener(type, ask, true);
    return () => { for (const type of events) document.removeEventListener(type, ask, true); };
  },
};
"""

_CSS = """
.al-lost { position: fixed; top: 0; left: 0; right: 0; z-index: 1000; padding: 16px 24px;
  font-size: 22px; line-height: 1.4; color: #fff; background: #b00020; }
"""


class ConnectionWatch(anywidget.AnyWidget):
    """Shows :data:`MESSAGE` when the kernel does not answer within ``patience`` seconds after an
    action in the page (see the module docstring)."""

    _esm = _ESM
    _css = _CSS
    message = traitlets.Unicode(MESSAGE).tag(sync=True)
    patience = traitlets.Float(30.0).tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(lambda _widget, _content, _buffers: self.send({"pong": 1}))
