"""Accessibility attributes that ipywidgets cannot set from Python, set in the page.

:class:`Accessibility` is an invisible widget (an ``anywidget`` with a few lines of JavaScript)
placed inside an explorer's box. In the browser it finds its explorer (the ``.al-explorer``
element around it) and, whenever that explorer's DOM changes:

* makes the text readout (``.al-readout``) and the tasks (``.al-tasks``) polite live regions
  (``role="status"``, ``aria-live="polite"``), so a screen reader announces the new numbers after
  a change, and a task's tick and the next task when one is reached;
* gives the figure (``.al-figure``, the ipympl canvas or the inline image) ``role="img"`` and an
  accessible name, :attr:`Accessibility.label` (a canvas has none of its own), and takes it out
  of the Tab order: ipympl's canvas is a Tab stop that keeps every key for matplotlib, Tab
  included, so a keyboard user who tabbed into it could not leave (Tab now leaves it also after
  a click);
* names every slider handle after its slider's description (noUiSlider handles are focusable
  and keyboard-driven but unnamed) and the field beside it, where a value can be typed (a Tab
  stop a screen reader read as a bare number, "0.80"), every group of toggle buttons after its
  description, and every button with a tooltip but only a short caption (the mask's "1" ... "5")
  after its tooltip;
* says of every toggle button whether it is pressed (``aria-pressed``, kept in step with the
  ``mod-active`` class that shades it): which score function, dtype or softmax is chosen, and
  which mask positions are kept, was told by the shade alone.

Its stylesheet (:data:`_CSS`) lets an explorer reflow in a notebook narrower than its figure (a
laptop's JupyterLab with the file browser open, 200 % browser zoom): the figure shrinks to the
width there is (its canvases keep their aspect ratio; nothing is redrawn) and a wide readout table
scrolls, where both were cut off at the notebook's right edge; a toggle button is as wide as its
label needs (the axis explorer's "keys (dim=-1, right)" lost its end to an ellipsis); and the
control that has the keyboard's focus gets a clear ring (2 px, JupyterLab's blue: 4.6:1 on white),
where ipywidgets draws a 1 px light blue line (2.2:1) around a button or a menu.

Nothing here computes or draws; it only names what is on the page and fits it to the page.
"""

from __future__ import annotations

import anywidget
import traitlets

__all__ = ["Accessibility"]

_ESM = r"""
function name(root, label) {
  for (const part of ['.al-readout', '.al-tasks']) {
    const live = root.querySelector(`${part} .widget-html-content`) || root.querySelector(part);
    if (live && live.getAttribute('aria-live') !== 'polite') {
      live.setAttribute('role', 'status');
      live.setAttribute('aria-live', 'polite');
    }
  }
  const figure = root.querySelector('.al-figure');
  if (figure && figure.getAttribute('aria-label') !== label) {
    figure.setAttribute('role', 'img');
    figure.setAttribute('aria-label', label);
    // ipympl's canvas takes every key it gets, Tab included: no Tab stop, and Tab leaves it
    figure.addEventListener('keydown', (e) => { if (e.key === 'Tab') e.stopPropagation(); }, true);
  }
  for (const stop of (figure ? figure.querySelectorAll('[tabindex="0"]') : []))
    stop.setAttribute('tabindex', '-1');
  for (const row of root.querySelectorAll('.widget-slider')) {
    const text = (row.querySelector('.widget-label') || {}).textContent;
    for (const handle of row.querySelectorAll('.noUi-handle')) {
      if (text && handle.getAttribute('aria-label') !== text.trim())
        handle.setAttribute('aria-label', text.trim());
    }
    const field = row.querySelector('.widget-readout');  // a value can be typed in here too
    if (text && field && field.getAttribute('aria-label') !== `${text.trim()}, typed value`) {
      field.setAttribute('role', 'textbox');
      field.setAttribute('aria-label', `${text.trim()}, typed value`);
    }
  }
  for (const group of root.querySelectorAll('.widget-toggle-buttons')) {
    const text = (group.querySelector('.widget-label') || {}).textContent;
    if (text && group.getAttribute('aria-label') !== text.trim()) {
      group.setAttribute('role', 'group');
      group.setAttribute('aria-label', text.trim());
    }
  }
  for (const button of root.querySelectorAll('.widget-toggle-button')) {
    const pressed = String(button.classList.contains('mod-active'));
    if (button.getAttribute('aria-pressed') !== pressed)
      button.setAttribute('aria-pressed', pressed);
  }
  for (const button of root.querySelectorAll('button[title]')) {
    const tip = button.getAttribute('title');
    if (tip && button.textContent.trim().length <= 2 && button.getAttribute('aria-label') !== tip)
      button.setAttribute('aria-label', tip);
  }
}

export default {
  render({ model, el }) {
    el.style.display = 'none';
    let root = null;
    const apply = () => {
      root = root || el.closest('.al-explorer');
      if (root) name(root, model.get('label'));
    };
    // until the explorer's box is in the page, watch the page; then only the box
    const observer = new MutationObserver(() => {
      const had = root;
      apply();
      if (root && !had) {
        observer.disconnect();
        observer.observe(root, { childList: true, subtree: true, characterData: true,
                                 attributes: true, attributeFilter: ['class'] });
      }
    });
    observer.observe(document.body, { childList: true, subtree: true });
    model.on('change:label', apply);
    requestAnimationFrame(apply);
    return () => observer.disconnect();
  },
};
"""


_CSS = """
.al-explorer .al-figure, .al-explorer .jupyter-matplotlib-figure,
.al-explorer .jupyter-matplotlib-canvas-container, .al-explorer .jupyter-matplotlib-canvas-div {
  max-width: 100%; }
.al-explorer .jupyter-matplotlib-canvas-div { height: auto !important; }
.al-explorer .jupyter-matplotlib-canvas-div canvas { width: 100% !important;
  height: 100% !important; }
.al-explorer .jupyter-matplotlib-canvas-div canvas:first-child { position: static !important;
  height: auto !important; }
.al-explorer img.al-figure { height: auto; }
.al-explorer .al-readout, .al-explorer .al-readout .widget-html-content { max-width: 100%;
  overflow-x: auto; }
.al-explorer .widget-toggle-buttons .widget-toggle-button { width: auto;
  min-width: var(--jp-widgets-inline-width-short, 148px); }
.al-explorer :focus-visible { outline: 2px solid var(--jp-brand-color1, #1976d2) !important;
  outline-offset: -2px; }
"""


class Accessibility(anywidget.AnyWidget):
    """Names an explorer's figure, readout and controls in the page (see the module docstring).

    ``label``: the figure's accessible name, one sentence saying what it shows.
    """

    _esm, _css = _ESM, _CSS
    label = traitlets.Unicode("").tag(sync=True)
