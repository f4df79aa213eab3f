"""The Explorer base: controls, a frozen state computed by the core, a live figure, tasks (what
an explorer offers its user: ``docs/design/explorers.md``).

A subclass defines ``_make_controls`` (a dict name -> ipywidget), ``_make_plot`` (its
:class:`attention_lab.plots.LivePlot`), ``_compute`` (the :func:`frozen_state` of the current
control values, computed by the core: always ``scores``, ``weights`` and ``context``, plus what
that explorer shows) and ``_show`` (the state's numbers to ``plot.update`` and the readout), and
may declare ``TASKS``. Setting ``control.value`` runs exactly the code path of a drag, so tests
drive explorers without a browser. How the figure reaches the page (ipympl canvas, inline PNG,
headless Agg) is :class:`attention_lab.widgets._canvas.FigureView`'s business. Callbacks never
print: an unexpected error is kept in ``explorer.last_error`` and shown as a message in the figure.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

import ipywidgets as W
import numpy as np

from .._format import fixed
from ..plots import fmt_vec
from ._a11y import Accessibility
from ._canvas import FigureView

__all__ = ["Explorer", "Task", "frozen_state", "log_slider", "slider", "int_slider",
           "policy_menu", "values_of", "html_table", "num"]


# --------------------------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """One goal of an explorer, reached by moving its controls.

    ``goal``: one sentence for the student, shown beside an open box, then a check mark.
    ``check``: ``state -> bool``, whether ``explorer.state`` (numbers the core computed) reaches
    the goal; it reads the state only, never pixels or widgets.
    """

    goal: str
    check: Callable[[Any], bool]

    def __post_init__(self):
        if not isinstance(self.goal, str) or not self.goal.strip():
            raise ValueError(f"goal must be a non-empty sentence, got {self.goal!r}")
        if not callable(self.check):
            raise TypeError(f"check must be a function of the explorer's state, got "
                            f"{type(self.check).__name__}")


class TaskProgress:
    """An explorer's tasks and the student's progress on them: per task whether the current
    state meets its goal (``met``) and whether it has since the explorer was made (``reached``),
    shown in ``box``."""

    def __init__(self, tasks):
        if isinstance(tasks, Task) or not isinstance(tasks, Sequence):
            raise TypeError(f"tasks must be a sequence of Task, got {type(tasks).__name__}")
        bad = [type(t).__name__ for t in tasks if not isinstance(t, Task)]
        if bad:
            raise TypeError(f"tasks must be a sequence of Task, got an item of type {bad[0]}")
        self.tasks = tuple(tasks)
        self.met = self.reached = (False,) * len(self.tasks)
        self.box = W.HTML()
        self.box.add_class("al-tasks")

    def check(self, state) -> None:
        self.met = tuple(bool(t.check(state)) for t in self.tasks)
        self.reached = tuple(r or m for r, m in zip(self.reached, self.met))
        self.box.value = self.html()

    def html(self) -> str:
        """The reached tasks with a check mark, then the first open one (later ones stay hidden
        until it is reached: a short sequence)."""
        n, lines = len(self.tasks), []
        for k, (task, reached) in enumerate(zip(self.tasks, self.reached)):
            mark, status = ("✓", "done") if reached else ("☐", "to do")
            lines.append(f"<div><span aria-hidden='true'>{mark}</span> <b>Task {k + 1} of {n} "
                         f"({status}):</b> {html.escape(task.goal)}</div>")
            if not reached:
                break
        return "".join(lines)


# --------------------------------------------------------------------------------------------
# Controls, readouts, states
# --------------------------------------------------------------------------------------------

def log_slider(value, lo, hi, description, step=0.02):
    """A base-10 log slider from ``lo`` to ``hi`` whose grid passes exactly through ``value``.

    The browser snaps a slider's value to ``min + k * step`` and sends the snapped value back to
    the kernel; a starting value off that grid (1.0 on a grid starting at log10(0.05)) would turn
    into 0.998 as soon as the slider is drawn. So the step is adjusted to land on ``value``.
    """
    lo_exp, hi_exp, at = math.log10(lo), math.log10(hi), math.log10(value)
    if at > lo_exp:
        step = (at - lo_exp) / max(1, round((at - lo_exp) / step))
    return W.FloatLogSlider(value=value, base=10, min=lo_exp, max=hi_exp, step=step,
                            description=description, readout_format=".3g",
                            continuous_update=True)


def slider(value, lo, hi, step, description, fmt=".2f"):
    return W.FloatSlider(value=value, min=lo, max=hi, step=step, description=description,
                         readout_format=fmt, continuous_update=True)


def int_slider(value, lo, hi, description, step=1):
    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                       continuous_update=True)


def policy_menu(description: str) -> W.Dropdown:
    """The all-masked policy ("zeros", "nan" or "raise"), "zeros" first."""
    return W.Dropdown(options=["zeros", "nan", "raise"], value="zeros", description=description)


def values_of(controls: dict, names) -> np.ndarray:
    """The values of the controls ``names`` as a float vector (a query, a weight vector)."""
    return np.array([controls[n].value for n in names], dtype=float)


def html_table(header, rows) -> str:
    """A small HTML table: ``header`` cells, then rows of (label, values...)."""
    th = "".join(f"<th style='padding:0 8px;text-align:right'>{html.escape(str(h))}</th>"
                 for h in header)
    body = []
    for label, *cells in rows:
        tds = "".join(f"<td style='padding:0 8px;text-align:right;font-family:monospace'>"
                      f"{html.escape(str(c))}</td>" for c in cells)
        body.append(f"<tr><th style='padding:0 8px;text-align:left'>{html.escape(str(label))}"
                    f"</th>{tds}</tr>")
    return f"<table><tr>{th}</tr>{''.join(body)}</table>"


num = fixed  #: ``num(x, digits=3)``: ``x`` with ``digits`` decimals; nan, inf and -inf as words


def frozen_state(cls):
    """Make ``cls`` an explorer's state: a frozen dataclass (fields cannot be reassigned) with
    ``as_dict()``."""
    cls = dataclass(frozen=True, eq=False)(cls)
    cls.as_dict = lambda self: {f.name: getattr(self, f.name) for f in fields(self)}
    return cls


def explorer_box(title: str, presentation: bool, controls: list, figure, numbers: list) -> W.VBox:
    """An explorer's box: its title, then the controls, the figure and the numbers (readout,
    reset). In presentation mode (a wide projector) the controls and the numbers sit in a column
    left of the figure, so that everything fits on one screen; the figure wraps below them when
    the page is too narrow."""
    parts = []
    if title:
        size = "1.3em" if presentation else "1.05em"
        parts.append(W.HTML(f"<b style='font-size:{size}'>{html.escape(title)}</b>"))
        parts[0].add_class("al-explorer-title")
    figure.add_class("al-figure")
    if presentation:
        side = W.VBox([*controls, *numbers],
                      layout=W.Layout(margin="0 16px 0 0", max_width="620px"))
        figure.layout.flex = "0 0 auto"  # its own size, not the whole row
        parts.append(W.Box([side, figure],
                           layout=W.Layout(flex_flow="row wrap", align_items="flex-start")))
    else:
        parts += [*controls, figure, *numbers]
    box = W.VBox(parts)
    box.add_class("al-explorer")
    return box


# --------------------------------------------------------------------------------------------
# The explorer
# --------------------------------------------------------------------------------------------

class Explorer:
    """Base class of the explorers (see the module docstring).

    ``presentation=True``: larger figure, fonts and controls, controls beside the figure (a
    projector). ``backend``: see :class:`~attention_lab.widgets._canvas.FigureView`. ``tasks``:
    the explorer's tasks (default: the class's ``TASKS``). ``show_tasks``: show them (default: yes,
    except in presentation mode, where the lecturer drives); :attr:`show_tasks` can change it later.
    """

    #: shown above the controls
    title = ""
    #: what the figure shows, in one sentence (its accessible name in the page, after the title)
    figure_label = ""
    #: the goals a student reaches with this explorer's controls, in order
    TASKS: tuple[Task, ...] = ()

    def __init__(self, *, presentation: bool = False, backend: str = "auto", tasks=None,
                 show_tasks: bool | None = None):
        self.presentation = bool(presentation)
        self.progress = TaskProgress(type(self).TASKS if tasks is None else tasks)
        self.tasks, self.task_box = self.progress.tasks, self.progress.box
        self.show_tasks = not self.presentation if show_tasks is None else bool(show_tasks)
        self.controls: dict[str, W.ValueWidget] = self._make_controls()
        self._initial = {name: c.value for name, c in self.controls.items()}
        self.plot = self._make_plot()
        self.plot.add_error_box()
        self.readout, self.reset_button = self._make_numbers()
        self.last_error: Exception | None = None
        self._sync_error = self.state = self._widget = None
        self._hold_depth, self._pending, self._syncing = 0, False, False
        self.view = FigureView(self.figure, self.plot.png, backend)
        self._update(draw=False)
        self.view.refresh()
        self._wire_controls()

    # -- construction ------------------------------------------------------------------------
    def _make_controls(self) -> dict:
        raise NotImplementedError

    def _make_plot(self):
        raise NotImplementedError

    def _compute(self):
        raise NotImplementedError

    def _show(self, state) -> None:
        raise NotImplementedError

    def _make_numbers(self):
        """The text readout of the numbers and the reset button."""
        readout = W.HTML()
        readout.add_class("al-readout")
        reset = W.Button(description="reset", icon="undo",
                         tooltip="put every control back to its starting value")
        reset.add_class("al-reset-explorer")
        reset.on_click(lambda _b: self.reset())
        return readout, reset

    def _wire_controls(self) -> None:
        """Each control named in the page (``al-control-<key>``), styled, and observed."""
        for name, c in self.controls.items():
            c.add_class(f"al-control-{name}")
            c.observe(self._on_change, names="value")
        self._style_controls()

    def _style_controls(self) -> None:
        width = "560px" if self.presentation else "420px"
        desc = "190px" if self.presentation else "150px"
        for c in self.controls.values():
            c.style.description_width = desc
            if isinstance(c, (W.FloatSlider, W.FloatLogSlider, W.IntSlider, W.Dropdown)):
                c.layout.width = width
            if self.presentation:
                c.add_class("attention-lab-presentation")
                if isinstance(c, W.Checkbox):  # large type: let the label take its room
                    c.layout.width = "auto"

    # -- properties ----------------------------------------------------------------------------
    @property
    def figure(self):
        """The matplotlib Figure (a LayeredFigure), built once."""
        return self.plot.figure

    @property
    def canvas(self):
        return self.figure.canvas

    @property
    def backend(self) -> str:
        """Where the figure is drawn: "ipympl", "inline" or "agg"."""
        return self.view.backend

    @property
    def widget(self) -> W.VBox:
        """The container: title, tasks, controls, (a one-time note,) figure, readout, reset
        (:func:`explorer_box`)."""
        if self._widget is None:
            controls = [self.task_box, self._controls_box()]
            if self.view.note is not None:
                controls.append(self.view.note)
            figure = self.view.widget
            self.accessibility = Accessibility(label=self.accessible_label)
            self._widget = explorer_box(self.title, self.presentation, controls, figure,
                                        [self.readout, self.reset_button, self.accessibility])
            self._widget.add_class(f"al-explorer-{self.css_name}")
        return self._widget

    @property
    def accessible_label(self) -> str:
        """The figure's accessible name: the title, what the figure shows, where the numbers are."""
        what = f" {self.figure_label}" if self.figure_label else ""
        title = self.title or type(self).__name__
        return (f"Figure of the {title}{'' if title.endswith(('?', '!', '.')) else '.'}{what} "
                f"The numbers are written out below the figure.")

    @property
    def css_name(self) -> str:
        """The explorer's name in CSS classes: ``al-explorer-<name>`` on the outer box
        (``temperature`` for ``TemperatureExplorer``); each control carries ``al-control-<key>``,
        the readout ``al-readout`` and the tasks ``al-tasks``, so a page (a browser test, a
        stylesheet) can find them."""
        return type(self).__name__.removesuffix("Explorer").lower() or "explorer"

    def _controls_box(self):
        return W.VBox(list(self.controls.values()))

    # -- tasks ---------------------------------------------------------------------------------
    @property
    def show_tasks(self) -> bool:
        """Whether the tasks are shown (the lecture demo hides them)."""
        return self._show_tasks

    @show_tasks.setter
    def show_tasks(self, value: bool) -> None:
        self._show_tasks = bool(value)
        self.task_box.layout.display = None if self._show_tasks and self.tasks else "none"

    @property
    def tasks_met(self) -> tuple[bool, ...]:
        """Per task, whether the current state reaches its goal."""
        return self.progress.met

    @property
    def tasks_reached(self) -> tuple[bool, ...]:
        """Per task, whether its goal has been reached since the explorer was made (it stays
        reached when the controls move on or are reset)."""
        return self.progress.reached

    # -- updating ------------------------------------------------------------------------------
    def _on_change(self, change) -> None:
        if same_value(change["old"], change["new"]):
            return  # a browser's rounding of a slider value: the figure already shows it
        with self.hold():
            if not self._syncing:
                try:
                    self._sync(change)
                except Exception as exc:  # never let a callback raise into the notebook
                    self._sync_error = exc
            self._pending = True

    def _sync(self, change) -> None:
        """Keep linked controls consistent (e.g. a preset menu and its sliders)."""

    def _sync_preset(self, change, names: tuple[str, ...]) -> None:
        """Keep the ``preset`` menu and the sliders ``names`` in step: choosing a preset moves the
        sliders (one redraw); moving a slider selects the preset the values now match (or the
        custom entry). Explorers with a preset menu call this from :meth:`_sync`."""
        c = self.controls
        if change["owner"] is c["preset"]:
            target = self.PRESETS.get(change["new"])
            if target is not None:
                with self._unsynced(), self.hold():
                    for n, v in zip(names, target):
                        c[n].value = v
        elif change["owner"] in [c[n] for n in names]:
            values, step = tuple(c[n].value for n in names), c[names[0]].step
            new = next((name for name, target in self.PRESETS.items()  # up to half a step
                        if np.allclose(target, values, rtol=0, atol=step / 2)), "custom")
            if c["preset"].value != new:
                with self._unsynced():
                    c["preset"].value = new

    @contextmanager
    def _unsynced(self):
        """Controls set in here by the explorer itself: :meth:`_sync` does not follow them."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _update(self, draw: bool = True) -> None:
        try:
            state = self._compute()
            self.state = state
            self._show(state)
            self.progress.check(state)
            self.last_error, self._sync_error = self._sync_error, None
            self.plot.message("error", None)
        except Exception as exc:  # shown in the figure, kept for tests; never printed
            self.last_error = exc
            self.plot.message("error", f"unexpected error: {type(exc).__name__}: {exc}"[:200])
            self.readout.value = ""  # its numbers are no longer those of the controls
        # what the figure says in words, also in the readout (for a student who cannot see it)
        self.readout.value += "".join(f"<p>{html.escape(' '.join(text.split()))}</p>"
                                      for text in self.plot.messages().values())
        if draw:
            self.view.refresh()

    @contextmanager
    def hold(self):
        """Set several controls with one recomputation and one redraw at the end."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1
            if self._hold_depth == 0 and self._pending:
                self._pending = False
                self._update()

    def set(self, **values) -> None:
        """Set several controls at once: ``explorer.set(q1=0.2, temperature=0.5)``."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise KeyError(f"unknown control(s) {unknown}; this explorer has {list(self.controls)}")
        with self.hold():
            for name, v in values.items():
                self.controls[name].value = v

    def reset(self) -> None:
        """Every control back to its starting value (one redraw). The tasks and their progress
        stay."""
        with self.hold(), self._unsynced():
            for name, v in self._initial.items():
                self.controls[name].value = v
        if self.state is None or self._pending:
            self._update()

    # -- display -------------------------------------------------------------------------------
    def describe(self) -> str:
        """One line about the current state (the text/plain of the displayed explorer)."""
        s = self.state
        return (f"{type(self).__name__}: weights {fmt_vec(np.ravel(s.weights)[:10])}"
                if s is not None and s.weights is not None else type(self).__name__)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = self.describe()
        bundle["image/png"] = base64.b64encode(self.plot.png()).decode("ascii")
        return bundle

    def __repr__(self) -> str:
        return self.describe()


def same_value(a, b) -> bool:
    """``a == b``, for floats up to the browser's rounding of a slider value.

    A browser snaps a slider to ``min + k * step`` in its own floating-point arithmetic and sends
    that value back: 0.8 on a grid from -1.5 in steps of 0.05 comes back as 0.7999999999999998.
    That is not a move of the control.
    """
    real = [isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)]
    if all(real) and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b
