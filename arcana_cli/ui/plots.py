"""Pictures drawn on the server as SVG: a store's growth, its recalls per day, a vault's link graph.

No script and no assets: each picture is markup the page embeds, with every
label escaped (note paths come from the user's files).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT, PAD = 760, 240, 44


def _frame(body: str, width: int = WIDTH, height: int = HEIGHT, label: str = "") -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}">{body}</svg>'
    )


def _empty(message: str) -> Markup:
    return _frame(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">{escape(message)}</text>', label=message)


def _scale(days: Sequence[date]):
    first, last = days[0].toordinal(), days[-1].toordinal()
    span = max(1, last - first)
    return lambda d: PAD + (d.toordinal() - first) / span * (WIDTH - 2 * PAD)


def _axes(days: Sequence[date], top: int, x) -> str:
    y0 = HEIGHT - PAD
    parts = [
        f'<line class="axis" x1="{PAD}" y1="{y0}" x2="{WIDTH - PAD}" y2="{y0}"/>',
        f'<line class="axis" x1="{PAD}" y1="{PAD / 2}" x2="{PAD}" y2="{y0}"/>',
        f'<text x="{PAD - 6}" y="{PAD / 2 + 4}" text-anchor="end">{top}</text>',
        f'<text x="{PAD - 6}" y="{y0}" text-anchor="end">0</text>',
    ]
    ticks = sorted({days[0], days[len(days) // 2], days[-1]})
    for d in ticks:
        parts.append(f'<text x="{x(d):.1f}" y="{y0 + 16}" text-anchor="middle">{d.isoformat()}</text>')
    return "".join(parts)


def _y(value: float, top: int) -> float:
    return HEIGHT - PAD - value / max(1, top) * (HEIGHT - 1.5 * PAD)


def line_plot(points: Sequence[tuple[date, int]], *, label: str) -> Markup:
    """Values over days as a step line (a value holds until the next day that changed it)."""
    if not points:
        return _empty("nothing recorded yet")
    days = [d for d, _ in points]
    top = max(v for _, v in points) or 1
    x = _scale(days)
    path, previous = [], None
    for d, v in points:
        if previous is not None:
            path.append(f"{x(d):.1f},{_y(previous, top):.1f}")
        path.append(f"{x(d):.1f},{_y(v, top):.1f}")
        previous = v
    dots = "".join(
        f'<circle cx="{x(d):.1f}" cy="{_y(v, top):.1f}" r="2.5" class="node"><title>{d.isoformat()}: {v}</title></circle>'
        for d, v in points
    )
    body = _axes(days, top, x) + f'<polyline class="line" points="{" ".join(path)}"/>' + dots
    return _frame(body, label=label)


def bar_plot(points: Sequence[tuple[date, int, int]], *, label: str) -> Markup:
    """Two counts per day side by side: recalls answered, memories returned."""
    if not points:
        return _empty("no recall recorded yet")
    days = [d for d, _, _ in points]
    top = max(max(a, b) for _, a, b in points) or 1
    x = _scale(days)
    width = max(2.0, min(14.0, (WIDTH - 2 * PAD) / max(1, days[-1].toordinal() - days[0].toordinal() + 1) / 2.4))
    bars = []
    for d, recalls, hits in points:
        for offset, value, kind in ((-width, recalls, "recalls"), (0.0, hits, "hits")):
            y = _y(value, top)
            bars.append(
                f'<rect class="bar {kind}" x="{x(d) + offset:.1f}" y="{y:.1f}" width="{width:.1f}" '
                f'height="{HEIGHT - PAD - y:.1f}"><title>{d.isoformat()}: {value} {kind}</title></rect>'
            )
    legend = (
        f'<rect class="bar recalls" x="{WIDTH - 190}" y="8" width="10" height="10"/><text x="{WIDTH - 175}" y="17">recalls</text>'
        f'<rect class="bar hits" x="{WIDTH - 110}" y="8" width="10" height="10"/><text x="{WIDTH - 95}" y="17">memories returned</text>'
    )
    return _frame(_axes(days, top, x) + "".join(bars) + legend, label=label)


GRAPH_SIZE = 760


def layout(nodes: Sequence[str], edges: Sequence[tuple[str, str]], *, rounds: int = 80) -> dict[str, tuple[float, float]]:
    """Force-directed positions in 0..1 (Fruchterman-Reingold), deterministic: the same graph
    draws the same way. Linked notes pull together, every pair pushes apart."""
    import numpy as np

    n = len(nodes)
    if n == 0:
        return {}
    index = {node: i for i, node in enumerate(nodes)}
    angle = np.arange(n) * 2.399963  # the golden angle: an even spiral to start from
    radius = np.sqrt((np.arange(n) + 0.5) / n) * 0.5
    pos = np.stack([0.5 + radius * np.cos(angle), 0.5 + radius * np.sin(angle)], axis=1)
    pairs = np.array([(index[a], index[b]) for a, b in edges if a in index and b in index], dtype=int).reshape(-1, 2)
    k = math.sqrt(1.0 / n)
    step = 0.1
    for _ in range(rounds):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        push = (delta / dist[..., None] * (k * k / dist)[..., None]).sum(axis=1)
        if len(pairs):
            d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
            length = np.maximum(np.linalg.norm(d, axis=1), 1e-3)
            pull = d * (length / k)[:, None]
            np.add.at(push, pairs[:, 0], -pull)
            np.add.at(push, pairs[:, 1], pull)
        size = np.maximum(np.linalg.norm(push, axis=1), 1e-9)
        pos += push / size[:, None] * np.minimum(size, step)[:, None]
        step *= 0.95
    low, high = pos.min(axis=0), pos.max(axis=0)
    pos = (pos - low) / np.maximum(high - low, 1e-9)
    return {node: (float(pos[i, 0]), float(pos[i, 1])) for node, i in index.items()}


def link_graph(nodes: Sequence[tuple[str, str, int]], edges: Sequence[tuple[str, str]], *, label: str) -> Markup:
    """Notes as dots sized by their links, wikilinks as lines; each dot names its note."""
    if not nodes:
        return _empty("the vault has no indexed notes")
    where = layout([n[0] for n in nodes], edges)
    margin, span = 40, GRAPH_SIZE - 80

    def at(node_id: str) -> tuple[float, float]:
        x, y = where[node_id]
        return margin + x * span, margin + y * span

    lines = "".join(
        f'<line class="edge" x1="{at(a)[0]:.1f}" y1="{at(a)[1]:.1f}" x2="{at(b)[0]:.1f}" y2="{at(b)[1]:.1f}"/>' for a, b in edges
    )
    dots = []
    for node_id, path, degree in nodes:
        x, y = at(node_id)
        name = path.rsplit("/", 1)[-1].removesuffix(".md")
        dots.append(
            f'<g><circle class="node" cx="{x:.1f}" cy="{y:.1f}" r="{3 + min(9.0, math.sqrt(degree) * 1.6):.1f}">'
            f"<title>{escape(path)} ({degree} links)</title></circle>"
            + (f'<text class="label" x="{x + 7:.1f}" y="{y + 4:.1f}">{escape(name[:28])}</text>' if degree >= 2 or len(nodes) <= 40 else "")
            + "</g>"
        )
    return _frame(lines + "".join(dots), GRAPH_SIZE, GRAPH_SIZE, label)
