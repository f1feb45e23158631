"""Plotly figures as plain data, embedded so that no text can become script.

Figures are built as dicts (plotly.js's own JSON) rather than ``go.Figure`` objects: validation
costs milliseconds per figure and a site has hundreds. Each figure lands in a
``<script type="application/json">`` block that ``assets/charts.js`` hands to ``Plotly.newPlot``;
no page carries inline code. ``<``, ``>`` and ``&`` are written as JSON escapes, so ``</script>``
in a campaign name cannot close the block. Plotly renders a subset of HTML in labels (``<b>``,
``<a>``...), so every label taken from the API is HTML-escaped before it goes in (Plotly decodes
the entities back to the literal text). Labels follow the names' display rule
(dashboards/display_text.py): controls visible, a name cut to a label's length with its hash so
two never merge, and a longer text in the hover box.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from dashboards.display_text import HOVER_LIMIT, NAME_LIMIT, TEXT_LIMIT, display_text
from dashboards.markup import Html, esc
from dashboards.money import exact_money_text

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}

LAYOUT: dict[str, Any] = {
    "template": {"layout": {"font": {"family": "system-ui, sans-serif", "size": 13}}},
    "height": 340,
    "margin": {"l": 70, "r": 20, "t": 40, "b": 50},
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#f7f8fa",
    "hovermode": "closest",
    "legend": {"orientation": "h", "y": -0.2},
}


def label(text: object, limit: int = NAME_LIMIT) -> str:
    """API text for a Plotly label: escaped so Plotly shows it literally, at a label's length."""
    # Plotly decodes &lt; &gt; &amp; but shows &quot; literally: quotes stay as they are (they
    # cannot open a tag, and Plotly sets text as text, never as an attribute).
    return html.escape(display_text(text, limit), quote=False)


def hover(text: object) -> str:
    """API text for a hover box: the name a label cuts, at a tooltip's length."""
    return label(text, HOVER_LIMIT)


def plot_number(value: Decimal | int | None) -> float | None:
    """Decimal to float for plotting only: positions on a chart, never a figure someone reads."""
    return None if value is None else float(value)


def axis_dates(days: Sequence[date | datetime]) -> list[str]:
    return [d.isoformat() for d in days]


def money_hover(values: Sequence[Decimal | None]) -> list[str]:
    """Exact figures for the hover box, formatted from the Decimal (the screen's tables round
    to 0.01; a hover box is where a reader asks for every digit)."""
    return [exact_money_text(v) for v in values]


def safe_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).translate(_JSON_ESCAPES)


def embed(title: str, data: list[dict[str, Any]], layout: dict[str, Any] | None = None) -> Html:
    """A figure with its accessible name and caption; rendered by assets/charts.js."""
    full_layout = {**LAYOUT, "title": {"text": label(title, TEXT_LIMIT)}, **(layout or {})}
    payload = safe_json({"data": data, "layout": full_layout})
    chart_id = "chart-" + hashlib.blake2b(payload.encode(), digest_size=6).hexdigest()
    height = int(full_layout["height"])
    return Html(
        f'<figure class="chart"><div class="plot" id="{chart_id}" role="img" '
        f'style="height:{height}px" aria-label="{esc(title)}"></div>'
        f'<script type="application/json" data-chart="{chart_id}">{payload}</script>'
        f"<figcaption>{esc(title)}</figcaption></figure>"
    )
