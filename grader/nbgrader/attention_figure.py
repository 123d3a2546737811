"""The feedback picture for a mask mistake: the student's attention weights beside the expected ones, as PNG."""
from __future__ import annotations

import base64
import io
import math

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def attention_png(student: list[list[float]], expected: list[list[float]], title: str) -> bytes:
    """Two T×T heatmaps on one shared 0..1 colour scale; NaN weights are drawn in red."""
    figure = Figure(figsize=(7.2, 3.4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    cmap = colormaps["viridis"].with_extremes(bad="red")
    for ax, matrix, label in ((axes[0], student, "your weights"), (axes[1], expected, "expected weights")):
        image = ax.imshow(matrix, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(label)
        ax.set_xlabel("key position j")
        ax.set_ylabel("query position i")
    has_nan = any(math.isnan(x) for row in student for x in row)
    figure.suptitle(title + ("  (red: NaN)" if has_nan else ""))
    figure.colorbar(image, ax=list(axes), shrink=0.8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def display_data(student: list[list[float]], expected: list[list[float]], title: str) -> dict:
    """A notebook `display_data` output holding the picture (base64 PNG) and a text fallback."""
    png = base64.b64encode(attention_png(student, expected, title)).decode("ascii")
    alt = f"{title}: your attention weights (left) beside the expected ones (right) · 你的注意力权重（左）与期望（右）"
    return {
        "output_type": "display_data",
        "data": {"image/png": png, "text/plain": f"<{alt}>"},
        "metadata": {"image/png": {"alt": alt}},
    }
