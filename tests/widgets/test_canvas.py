"""What the browser (and the lecture demo) relies on, tested without a browser: the PNG frames of
the explorers' ipympl canvas, when a frame is sent at once and when the browser paces it, the
resize handle kept off, the CSS classes of explorers, controls and readouts, and the presentation
layout (controls beside the figure)."""

from __future__ import annotations

import gc
import io
import time
import weakref

import numpy as np
import pytest
from PIL import Image

from attention_lab import widgets
from attention_lab.plots import _render
from attention_lab.widgets import _png

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # ipympl's Toolbar
NAMES = list(widgets.EXPLORERS)


def decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


# --- the PNG encoder ----------------------------------------------------------------------------

@pytest.fixture(params=["isal", "zlib"])
def deflate(request, monkeypatch):
    """encode_png with ISA-L's deflate (installed with the notebooks' requirements) and with
    zlib's, the fallback where isal has no wheel."""
    if request.param == "zlib":
        import zlib

        monkeypatch.setattr(_png, "_deflate", zlib.compress)
    else:
        from isal import isal_zlib

        assert _png._deflate is isal_zlib.compress
    return request.param


def test_encode_png_round_trips_any_pixels(deflate):
    rng = np.random.default_rng(5)
    for shape in [(1, 1, 4), (3, 7, 4), (64, 33, 4)]:
        pixels = rng.integers(0, 256, shape, dtype=np.uint8)
        png = widgets.encode_png(pixels)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        np.testing.assert_array_equal(decode(png), pixels)


def test_encode_png_equals_pillow_on_a_figure_and_is_not_larger_than_twice(deflate):
    e = widgets.QueryExplorer(backend="agg", presentation=True)
    pixels = np.asarray(e.canvas.buffer_rgba()).copy()
    ours = widgets.encode_png(pixels)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="png", compress_level=1)
    np.testing.assert_array_equal(decode(ours), decode(buf.getvalue()))
    assert len(ours) < 2 * len(buf.getvalue())


@pytest.mark.parametrize("bad", [np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 4)),
                                 np.zeros((4, 4), np.uint8)])
def test_encode_png_refuses_what_is_not_rgba_bytes(bad):
    with pytest.raises(ValueError, match=r"rgba must be a uint8 array of shape \(H, W, 4\)"):
        widgets.encode_png(bad)


# --- the canvas: frames, pacing, resize handle ----------------------------------------------------

@pytest.fixture
def live():
    """A TemperatureExplorer on ipympl whose canvas acts as if a browser view were ready; frames
    and messages to the browser are recorded instead of sent."""
    pytest.importorskip("ipympl")
    e = widgets.TemperatureExplorer()
    canvas = e.canvas
    sent = {"frames": [], "events": []}
    canvas.send_binary = sent["frames"].append
    real_send_event = canvas.send_event
    canvas.send_event = lambda kind, **kw: (sent["events"].append(kind),
                                            real_send_event(kind, **kw))
    canvas.syncing_data_url = False  # what the browser's 'initialized' message does
    return e, sent


def test_before_the_browser_is_ready_changes_only_ask_for_a_draw(monkeypatch):
    pytest.importorskip("ipympl")
    e = widgets.TemperatureExplorer()
    frames, idle = [], []
    monkeypatch.setattr(e.canvas, "send_binary", frames.append)
    monkeypatch.setattr(e.canvas, "draw_idle", lambda: idle.append(1))
    e.controls["temperature"].value = 0.5
    assert idle == [1] and frames == []


def test_after_a_pause_a_change_sends_its_frame_at_once(live, monkeypatch):
    e, sent = live
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    e.controls["temperature"].value = 0.5
    assert len(sent["frames"]) == 1 and "draw" not in sent["events"]
    # the frame shows the new state: decoded, it equals what the canvas holds now
    now = np.asarray(e.canvas.get_renderer().buffer_rgba())
    frame = decode(sent["frames"][0])
    shown = frame[..., 3] > 0
    assert shown.any()
    np.testing.assert_array_equal(frame[shown], now[shown])
    # a change right after it: the browser paces the next frame (asks for it when ready)
    clock[0] += 0.05
    e.controls["temperature"].value = 0.8
    assert len(sent["frames"]) == 1 and sent["events"].count("draw") == 1
    # the browser's request draws it
    e.canvas._handle_message(e.canvas, {"type": "draw"}, [])
    assert len(sent["frames"]) == 2
    # after a pause, at once again
    clock[0] += 1.0
    e.controls["temperature"].value = 2.0
    assert len(sent["frames"]) == 3 and sent["events"].count("draw") == 1


def test_frames_have_the_pixels_of_ipympl_frames(live, monkeypatch):
    """Whatever frame is sent (full or diff), painting it over the last one gives the canvas,
    also after several diff frames in a row (a drag, each frame asked for by the browser)."""
    from ipympl.backend_nbagg import Canvas

    e, sent = live
    canvas = e.canvas
    canvas._force_full = True
    canvas.draw()
    screen = decode(sent["frames"][-1]).copy()
    for paced in (False, True):
        # paced: changes come faster than quiet_seconds, the browser asks for each frame
        monkeypatch.setattr(canvas, "quiet_seconds", 1e9 if paced else 0.0)
        for value in (0.3, 0.31, 4.0, 0.5, 0.52):
            n = len(sent["frames"])
            e.controls["temperature"].value = value
            if paced:  # (otherwise the change has sent its frame at once)
                canvas._handle_message(canvas, {"type": "draw"}, [])
            frame = decode(sent["frames"][-1])
            assert len(sent["frames"]) > n and (whole(sent["frames"][-1]) != paced)
            painted = frame[..., 3] > 0
            now = np.asarray(canvas.get_renderer().buffer_rgba())
            if paced:  # a diff paints only the pixels that changed
                assert not (painted & (screen == now).all(axis=-1)).any()
            screen[painted] = frame[painted]
            np.testing.assert_array_equal(screen, now)
    canvas._png_is_old = canvas._force_full = True
    ours = decode(canvas.get_diff_image())
    canvas._png_is_old = canvas._force_full = True
    stock = decode(Canvas.get_diff_image(canvas))
    np.testing.assert_array_equal(ours, stock)


def whole(frame: bytes) -> bool:
    """A frame that shows the whole figure (a diff leaves unchanged pixels transparent)."""
    return bool((decode(frame)[..., 3] == 255).all())


def test_a_frame_the_browser_did_not_ask_for_is_whole_and_only_sent_on_a_change(live,
                                                                                 monkeypatch):
    """The page may drop a frame that another follows before it is decoded: a frame sent at once
    (not asked for) must not depend on the one before it."""
    e, sent = live
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    for value in (0.5, 0.51, 3.0):
        clock[0] += 1.0
        e.controls["temperature"].value = value
        assert whole(sent["frames"][-1]), f"temperature {value}: the frame sent at once is a diff"
    n = len(sent["frames"])
    clock[0] += 1.0
    e.canvas.push_frame()  # nothing changed (e.g. a slider's value echoed by the browser)
    assert len(sent["frames"]) == n
    e.canvas._handle_message(e.canvas, {"type": "draw"}, [])  # the browser asks: it gets one
    assert len(sent["frames"]) == n + 1


def in_an_event_loop_of_its_own(body) -> None:
    """Run ``body(wait)`` in a thread with an asyncio loop (the canvas's timers run on it, as in
    a kernel); ``wait(seconds)`` runs the loop that long. A thread of its own: another test may
    have left a loop marked running in this one."""
    import asyncio
    import threading

    def run():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            body(lambda seconds: loop.run_until_complete(asyncio.sleep(seconds)))
        finally:
            loop.close()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)


def test_once_still_the_last_frame_is_the_whole_figure(live, monkeypatch):
    """A drag's paced frames are diffs; any of them may be dropped by the page, so
    ``settle_seconds`` after the last one the whole figure is sent."""
    e, sent = live
    canvas = e.canvas
    monkeypatch.setattr(canvas, "settle_seconds", 0.05)
    seen = {}

    def drag_then_wait(wait):
        with monkeypatch.context() as m:  # a clock for the canvas; the loop keeps its own
            clock = [100.0]
            m.setattr(time, "monotonic", lambda: clock[0])
            e.controls["temperature"].value = 0.5          # at once, whole
            for value in (0.6, 0.7, 0.8):                   # a drag: paced, diffs
                clock[0] += 0.01
                e.controls["temperature"].value = value
                canvas._handle_message(canvas, {"type": "draw"}, [])
        seen["after drag"] = list(sent["frames"])
        wait(0.3)
        seen["settled"] = list(sent["frames"])
        wait(0.2)
        seen["later"] = list(sent["frames"])

    in_an_event_loop_of_its_own(drag_then_wait)
    after, settled = seen["after drag"], seen["settled"]
    assert not whole(after[-1])
    assert len(settled) == len(after) + 1, "no whole frame followed the drag"
    np.testing.assert_array_equal(decode(settled[-1]),
                                  np.asarray(canvas.get_renderer().buffer_rgba()))
    assert len(seen["later"]) == len(settled), "the whole frame is sent once, not repeatedly"


def test_an_unchanged_figure_is_neither_drawn_nor_encoded_again(live, monkeypatch):
    """A figure unchanged since it was last drawn is not drawn again: a page that opens (it asks
    for the whole figure twice) gets the kept whole frame again, and the whole frame that follows
    a drag's last diff is encoded from the pixels already drawn. A change (the explorer's, or one
    matplotlib marks stale) is drawn; every frame shows the figure as it is."""
    e, sent = live
    canvas = e.canvas
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    encoded, drawn = [], []
    from attention_lab.widgets import _fast_canvas

    real = _fast_canvas.encode_png
    monkeypatch.setattr(_fast_canvas, "encode_png", lambda *a: encoded.append(1) or real(*a))
    real_draw = canvas.figure.draw
    monkeypatch.setattr(canvas.figure, "draw", lambda r: drawn.append(1) or real_draw(r))
    now = lambda: np.asarray(canvas.get_renderer().buffer_rgba())  # noqa: E731

    def page_asks_for_the_whole_figure():
        canvas._handle_message(canvas, {"type": "refresh"}, [])
        canvas._handle_message(canvas, {"type": "draw"}, [])
        return sent["frames"][-1]

    first = page_asks_for_the_whole_figure()
    assert whole(first) and (len(drawn), len(encoded)) == (1, 1)
    assert page_asks_for_the_whole_figure() is first and (len(drawn), len(encoded)) == (1, 1)
    clock[0] += 1.0
    e.controls["temperature"].value = 0.5                 # a change after a pause: whole
    changed = sent["frames"][-1]
    assert whole(changed) and (len(drawn), len(encoded)) == (2, 2)
    np.testing.assert_array_equal(decode(changed), now())
    assert page_asks_for_the_whole_figure() is changed and (len(drawn), len(encoded)) == (2, 2)
    e.controls["temperature"].value = 0.6                 # paced: a diff
    canvas._handle_message(canvas, {"type": "draw"}, [])
    assert not whole(sent["frames"][-1]) and (len(drawn), len(encoded)) == (3, 3)
    canvas._send_whole()                                  # the drag settled: whole, not drawn
    settled = sent["frames"][-1]
    assert whole(settled) and (len(drawn), len(encoded)) == (3, 4)
    np.testing.assert_array_equal(decode(settled), now())
    assert page_asks_for_the_whole_figure() is settled and (len(drawn), len(encoded)) == (3, 4)
    canvas.figure.axes[0].set_xlim(0, 1)                  # a zoom: matplotlib marks it stale
    zoomed = page_asks_for_the_whole_figure()
    assert len(drawn) == 4 and zoomed is not settled
    np.testing.assert_array_equal(decode(zoomed), now())
    canvas.push_frame()              # the explorer changed it (paced: the browser asks back)
    canvas.figure.stale = False      # ... in a way matplotlib did not see
    canvas._handle_message(canvas, {"type": "draw"}, [])
    assert len(drawn) == 5


def test_an_idle_figure_keeps_only_its_frame_and_comes_back_the_same(live, monkeypatch):
    """Cooled, a figure holds its last whole frame and its static layer compressed, no pixel
    buffer; a page that opens gets that frame without a draw; the next change draws the same
    pixels as a figure that never cooled; asking for the pixels draws them again, sending
    nothing."""
    e, sent = live
    canvas, figure = e.canvas, e.figure
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    given_back = []
    from attention_lab.widgets import _fast_canvas

    monkeypatch.setattr(_fast_canvas, "_give_back_freed_memory", lambda: given_back.append(1))
    drawn = []
    real_draw = figure.draw
    monkeypatch.setattr(figure, "draw", lambda r: drawn.append(1) or real_draw(r))

    def page_asks_for_the_whole_figure():
        canvas._handle_message(canvas, {"type": "refresh"}, [])
        canvas._handle_message(canvas, {"type": "draw"}, [])
        return sent["frames"][-1]

    first = page_asks_for_the_whole_figure()
    pixels = np.asarray(canvas.get_renderer().buffer_rgba()).copy()
    renderer = weakref.ref(canvas.get_renderer())
    canvas.cool()
    assert canvas._cold and given_back == [1]
    assert canvas.renderer is None and canvas._last_buff is None and figure._static is None
    gc.collect()
    assert renderer() is None, "something still holds the renderer (and its pixel buffer)"
    assert _render._text_bitmap.cache_info().currsize == 0            # the labels' lines too
    assert _render._coverage.cache_info().currsize == 0
    assert len(figure._packed[0]) < pixels.nbytes / 20       # the static layer, compressed
    n = len(drawn)
    assert page_asks_for_the_whole_figure() is first and len(drawn) == n and canvas._cold
    np.testing.assert_array_equal(np.asarray(canvas.buffer_rgba()), pixels)  # drawn again
    assert not canvas._cold and len(drawn) == n + 1 and sent["frames"][-1] is first
    canvas.cool()
    clock[0] += 1.0
    e.controls["temperature"].value = 0.5                     # a change after a pause
    twin = widgets.TemperatureExplorer(backend="agg")
    twin.controls["temperature"].value = 0.5
    frame = sent["frames"][-1]
    assert whole(frame) and not canvas._cold
    np.testing.assert_array_equal(decode(frame), np.asarray(twin.figure.canvas.buffer_rgba()))
    e.controls["temperature"].value = 0.6                     # paced: a diff, as before
    canvas._handle_message(canvas, {"type": "draw"}, [])
    assert not whole(sent["frames"][-1])
    canvas.cool()                      # after a diff, no whole frame shows the figure: not cold
    assert not canvas._cold and canvas.renderer is not None and given_back == [1, 1]


@pytest.mark.parametrize("name", NAMES)
def test_every_explorers_cooled_figure_frees_its_renderer(name):
    """matplotlib's artists keep the renderer they last drew with: cooling must let go of it in
    every explorer's figure, or its pixel buffer stays (presentation size: 2 MiB and more)."""
    pytest.importorskip("ipympl")
    e = widgets.EXPLORERS[name](presentation=True)
    canvas = e.canvas
    canvas.send_binary = lambda data: None
    canvas.syncing_data_url = False
    canvas._handle_message(canvas, {"type": "draw"}, [])        # a whole frame, kept
    renderer = weakref.ref(canvas.get_renderer())
    canvas.cool()
    gc.collect()
    assert canvas._cold and renderer() is None
    assert not canvas.figure.stale                               # cooling changed nothing shown


def test_a_figure_cools_some_seconds_after_its_last_frame(live, monkeypatch):
    e, sent = live
    canvas = e.canvas
    monkeypatch.setattr(canvas, "cool_seconds", 0.2)
    seen = {}

    def frame_then_wait(wait):
        canvas._handle_message(canvas, {"type": "draw"}, [])   # a whole frame
        wait(0.1)
        seen["soon"] = canvas._cold
        wait(0.4)
        seen["later"] = canvas._cold

    in_an_event_loop_of_its_own(frame_then_wait)
    assert sent["frames"] and seen == {"soon": False, "later": True}


def test_the_resize_handle_stays_off_once_the_browser_view_is_ready(live, monkeypatch):
    e, _ = live
    canvas = e.canvas
    assert canvas.resizable is False
    sent_keys = []
    monkeypatch.setattr(canvas, "send_state", lambda key=None: sent_keys.append(key))
    canvas._handle_message(canvas, {"type": "initialized"}, [])
    assert sent_keys[-1] == "resizable"


def test_the_model_explorer_uses_the_same_canvas():
    pytest.importorskip("ipympl")
    from attention_lab.toy.explorer import ModelExplorer

    from attention_lab.widgets._fast_canvas import FastCanvas

    ex = ModelExplorer()
    assert ex.backend == "ipympl"
    assert type(ex.canvas) is type(widgets.TemperatureExplorer().canvas) is FastCanvas
    assert FastCanvas.__qualname__ == "FastCanvas"  # a module's class, not one built in a function
    assert ex.canvas.resizable is False and ex.canvas.toolbar_visible is False


# --- classes for pages and stylesheets; the presentation layout -----------------------------------

def classes(w) -> list:
    return list(w._dom_classes)


@pytest.mark.parametrize("name", NAMES)
def test_explorers_carry_css_classes(name, explorers):
    e = explorers[name]
    short = type(e).__name__.removesuffix("Explorer").lower()
    assert e.css_name == short
    assert {"al-explorer", f"al-explorer-{short}"} <= set(classes(e.widget))
    assert "al-readout" in classes(e.readout)
    for key, control in e.controls.items():
        assert f"al-control-{key}" in classes(control)


def _descendants(w):
    yield w
    for child in getattr(w, "children", ()):
        yield from _descendants(child)


@pytest.mark.parametrize("name", ["query", "mask"])
def test_presentation_puts_the_controls_beside_the_figure(name):
    pytest.importorskip("ipympl")
    e = widgets.EXPLORERS[name](presentation=True)
    title, body = e.widget.children
    assert "al-explorer-title" in classes(title)
    side, figure = body.children
    assert figure is e.canvas and body.layout.flex_flow == "row wrap"
    inside = list(_descendants(side))
    assert e.readout in inside and e.reset_button in inside
    assert all(c in inside for c in e.controls.values())
    small = widgets.EXPLORERS[name]()
    assert small.canvas in small.widget.children  # in a notebook: figure under the controls


def test_model_explorer_classes_readout_and_layout():
    from attention_lab.toy.explorer import ModelExplorer

    ex = ModelExplorer(presentation=True)
    assert ex.widget is ex.widget
    assert {"al-explorer", "al-explorer-model"} <= set(classes(ex.widget))
    assert all(f"al-control-{k}" in classes(c) for k, c in ex.controls.items())
    assert "al-readout" in classes(ex.readout)
    assert ex.readout.value == ("<p>source abcdefghij → decoded jihgfedcba (expected jihgfedcba): "
                                "10/10 right<br>temperature 1.00, no window; weight peaks on the "
                                "true position in 10/10 steps</p>")
    ex.show_failure_case()
    assert "0/10 right" in ex.readout.value or "/10 right" in ex.readout.value
    assert "window 1..3" in ex.readout.value  # positions 1..S
    ex.controls["source"].value = "xyz!"
    assert ex.readout.value.startswith("<p>cannot decode &#x27;xyz!&#x27;")
    assert "the figure still shows the source abcdefghij" in ex.readout.value
    title, body = ex.widget.children
    assert "al-explorer-title" in classes(title)
    side, figure = body.children
    assert figure is ex.view.widget
    assert ex.readout in side.children


def test_model_figure_redraws_only_what_changes():
    """A new temperature keeps the cached axes, ticks and labels; a new source or a new decoded
    output renders them again; cached and full drawings are the same pixels."""
    from attention_lab.toy.explorer import ModelExplorer

    ex = ModelExplorer(presentation=True)
    fig = ex.figure
    fig.canvas.draw()
    renders = fig.static_renders
    ex.controls["temperature"].value = 1.12
    fig.canvas.draw()
    assert fig.static_renders == renders
    ex.controls["source"].value = "badge"
    fig.canvas.draw()
    assert fig.static_renders == renders + 1
    cached = np.asarray(fig.canvas.buffer_rgba()).copy()
    # a full drawing in the same layout (constrained layout moves the axes by fractions of a
    # pixel each time it runs, until it settles)
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    fig.cache_enabled = False
    try:
        fig.canvas.draw()
        np.testing.assert_array_equal(cached, np.asarray(fig.canvas.buffer_rgba()))
    finally:
        fig.cache_enabled = True
        fig.set_layout_engine(engine)


def test_model_figure_comes_back_to_the_same_pixels():
    """Another source and back: the same layout, pixel for pixel (the demo's reset relies on it)."""
    from attention_lab.toy.explorer import ModelExplorer

    ex = ModelExplorer(presentation=True)
    fig = ex.figure
    fig.canvas.draw()
    start = np.asarray(fig.canvas.buffer_rgba()).copy()
    for source in ("badge", "lkjihgfedcba", "abc"):
        ex.controls["source"].value = source
        fig.canvas.draw()
    ex.reset()
    fig.canvas.draw()
    np.testing.assert_array_equal(np.asarray(fig.canvas.buffer_rgba()), start)
