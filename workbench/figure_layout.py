"""Every figure's text on its canvas: one layout for the study report's and the agreement bundle's figures.

:func:`fit_canvas` lays a matplotlib figure out and grows it until every artist lies inside it
(``tests/core/test_report_figures_fit.py`` measures the result through the renderer).
"""

from __future__ import annotations

# Laid out, an axes keeps at least this share of the width and height it was created with (the
# figure grows instead: long pair names never squeeze the data to a sliver).
MIN_AXES_SHARE = 0.6


def fit_canvas(fig, pad: float = 0.06, rounds: int = 6) -> None:  # type: ignore[no-untyped-def]
    """Lay ``fig`` out and grow it until every artist (tick labels, legends beside the axes, titles)
    lies on the canvas, ``pad`` inches from its edge.

    Axes in a grid get a tight layout once the figure leaves their decorations room (so matplotlib's
    "Tight layout not applied" never comes: a layout that cannot apply grows the figure and is tried
    again); a constrained layout stays and is given the room; axes placed by hand keep their size
    and move with the edge that grew. The axes never shrink below the size they were given.
    """
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # a renderer to measure with (a bare Figure's canvas has none)
    gridded = fig.get_layout_engine() is None and all(ax.get_subplotspec() is not None for ax in fig.axes)
    given = {ax: ax.get_position().size * fig.get_size_inches() for ax in fig.axes}  # inches

    def squeezed(width: float, height: float) -> bool:
        return any((ax.get_position().size * (width, height) < MIN_AXES_SHARE * size - 1e-3).any()
                   for ax, size in given.items())

    for _ in range(rounds):
        if gridded:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fig.tight_layout()
            applied = not any("not applied" in str(w.message) for w in caught)
        else:
            applied = True
        renderer = canvas.get_renderer()
        fig.draw_without_rendering()  # runs a constrained layout, places legends and tick labels
        box = fig.get_tightbbox(renderer)
        width, height = fig.get_size_inches()
        left, bottom = max(0.0, pad - box.x0), max(0.0, pad - box.y0)
        right, top = max(0.0, box.x1 - (width - pad)), max(0.0, box.y1 - (height - pad))
        if applied and max(left, right, top, bottom) < 1e-3 and not (gridded and squeezed(width, height)):
            return
        if gridded:  # long tick labels squeeze the axes: give them back at least MIN_AXES_SHARE of their size
            for ax, (w0, h0) in given.items():
                w, h = ax.get_position().size * (width, height)
                grid = ax.get_subplotspec().get_gridspec()
                right = max(right, (MIN_AXES_SHARE * w0 - w) * grid.ncols)
                top = max(top, (MIN_AXES_SHARE * h0 - h) * grid.nrows)
        if not applied:  # the margins alone outgrew the figure: give the axes their width and height back
            left, right = left + 0.5, right + 0.5
            bottom, top = bottom + 0.3, top + 0.3
        grown_w, grown_h = width + left + right, height + bottom + top
        if not gridded and fig.get_layout_engine() is None:
            for ax in fig.axes:
                x0, y0, w, h = ax.get_position().bounds
                ax.set_position(((x0 * width + left) / grown_w, (y0 * height + bottom) / grown_h,
                                 w * width / grown_w, h * height / grown_h))
        fig.set_size_inches(grown_w, grown_h)
    if gridded:  # the last size's layout (the figure test measures what is left)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout()
