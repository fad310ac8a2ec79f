"""How long each error format's text of each fault kind is, as docs/formats.md tabulates it.

The text a model reads of a failure (``Observation.rendered_text()``), in characters, averaged
over the three vendor styles, as ``fleetchaos faults show KIND --errors A,B`` prints it one kind
at a time (:func:`fleetchaos.scenario.kind_renderings.kind_renderings`).  Prints one markdown
row per format, shortest first: the mean over the tool-side kinds, then a few kinds, then the
mean over every kind the catalogue reports (model-side kinds included).

    .venv/bin/python benchmarks/text_sizes.py
"""

from __future__ import annotations

import statistics

#: The formats of the table, and the kinds it shows one by one.
FORMATS = (
    "generic",
    "mcp",
    "mcp-structured",
    "langgraph-toolnode",
    "problem-details",
    "jsonrpc",
    "agent-sdk-default",
    "failure-type",
    "google-rpc",
    "subagent-result",
    "structured",
    "raw",
    "tool-envelope",
)
SHOWN = ("rate_limit", "timeout", "expired_key", "disk_full", "node_crash", "validation_error")


def main() -> None:
    from fleetchaos.scenario.kind_renderings import kind_renderings
    from fleetchaos.sim.kinds import KINDS
    from fleetchaos.sim.kinds_model import MODEL_SIDE_KINDS

    reported = [name for name, kind in KINDS.items() if kind.wire is not None]
    tool_side = [name for name in reported if name not in MODEL_SIDE_KINDS]
    sizes: dict[str, dict[str, float]] = {f: {} for f in FORMATS}
    for kind in reported:
        by_format: dict[str, list[int]] = {}
        for rendering in kind_renderings(kind, FORMATS):
            by_format.setdefault(rendering.errors, []).append(rendering.chars)
        for name, lengths in by_format.items():
            sizes[name][kind] = statistics.mean(lengths)
    print(
        f"| format | mean over the {len(tool_side)} tool-side kinds | "
        + " | ".join(f"`{k}`" for k in SHOWN)
        + f" | mean over all {len(reported)} |"
    )
    print("|---|" + "---:|" * (len(SHOWN) + 2))
    rows = sorted(FORMATS, key=lambda f: statistics.mean(sizes[f][k] for k in tool_side))
    for name in rows:
        mean = statistics.mean(sizes[name][k] for k in tool_side)
        every = statistics.mean(sizes[name][k] for k in reported)
        shown = " | ".join(f"{sizes[name][k]:.0f}" for k in SHOWN)
        print(f"| `{name}` | {mean:.0f} (~{mean / 4:.0f} tokens) | {shown} | {every:.0f} |")


if __name__ == "__main__":
    main()
