"""matplotlib internals the live figures use: the Agg canvas's renderer cache, the renderer a
``Text`` keeps from its last draw, and the FreeType load flags of Agg's text.

Tested with matplotlib 3.11 (requirements.txt); accepts ``>=3.10,<4`` (``ft2font.LoadFlags``, which
the glyph flags are, exists since 3.10). Checked at import: :func:`attention_lab._compat.require`.
"""

from __future__ import annotations

from . import require

ACCEPTS = ("3.10", "4")
VERSION = require("matplotlib", *ACCEPTS)


def glyph_load_flags():
    """The FreeType load flags Agg draws text with (``rcParams["text.hinting"]``), so that a glyph
    rasterised by hand matches the figure's other text."""
    from matplotlib.backends.backend_agg import get_hinting_flag

    return get_hinting_flag()


def drop_agg_renderer(canvas) -> None:
    """Let an Agg canvas forget its renderer (and its pixel buffer): its next draw makes a new
    one (Agg reuses a renderer while the key of its last one, size and dpi, is unchanged)."""
    canvas.renderer = None
    canvas._lastKey = None


def forget_text_renderers(artist) -> None:
    """Drop the renderer that ``Text`` artists keep from their last draw (and with it the
    renderer's pixel buffer), in ``artist`` and all it contains, without touching anything drawn:
    an Axis's ticks are read as they are (``get_children`` would make new ones and mark the figure
    stale)."""
    from matplotlib.axis import Axis

    if getattr(artist, "_renderer", None) is not None:
        artist._renderer = None
    if isinstance(artist, Axis):  # the ticks made so far, without making them (a lazy property)
        children = [artist.label, artist.offsetText, *artist.__dict__.get("majorTicks", ()),
                    *artist.__dict__.get("minorTicks", ())]
    else:
        children = artist.get_children()
    for child in children:
        forget_text_renderers(child)


def move_axes(ax, position) -> None:
    """Put ``ax`` at ``position`` (its original and active box) and leave it in the layout: the
    public ``Axes.set_position`` also takes the axes out of the layout engine's hands."""
    ax._set_position(position, which="both")
