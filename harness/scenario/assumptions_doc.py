"""docs/assumptions.md, generated from :data:`fleetchaos.scenario.assumptions.ASSUMPTIONS` and the models.

Run ``fleetchaos schema assumptions > docs/assumptions.md`` after changing an assumption, a
model default or ``scenarios/default.yaml``; ``tests/unit/test_assumptions.py`` fails while
the file and :func:`render` differ.
"""

from __future__ import annotations

from typing import Any

from fleetchaos.scenario.assumptions import ASSUMPTIONS, GROUPS, Assumption, concrete, model_default
from fleetchaos.scenario.fields import yaml_value

__all__ = ["render"]

_INTRO = """\
# Assumptions

Every figure fleetchaos reports rests on settings nothing in the simulation measures: what
a failure reveals, whether partial work is reported or resumable, how often envelopes lie,
how a provider admits calls, what a page or a silent failure costs.  Each is a scenario
setting with a default, the reason for it, and a plausible range; this page lists them.
A finding holds under these conditions, and the sensitivity study (`fleetchaos robustness`)
varies each one over its range to show where it would reverse.

Set any of them in a scenario file, or for one command with `--param PATH=VALUE` (`run`,
`compare`); vary one with `fleetchaos sweep --param PATH=A,B,C` or `fleetchaos robustness
--param PATH=A,B,C`.  A path with `[]` is each element of a list (`fleet.providers[0]...`),
one with `[wrong_envelope]` each fault rule of that kind (`faults[5]...` in `default`).
The defaults are the scenario models' (docs/scenarios.md); the headline runs
`scenarios/default.yaml`, whose values are shown where they differ and whose comments say
why each is what it is.  This page is generated (`fleetchaos schema assumptions`).

## What a failure reveals: the format ladder

Without an envelope a failure reveals one of three things, each an error format a
comparison runs as its own arm (`--errors`):

* `generic`: the bare word "failed";
* `status`: the HTTP status and exception class a caught SDK exception carries
  (`HTTP 429 RateLimitError`), no vendor text, no envelope; `raw-parse` reads it;
* `raw`: the vendor's whole text, stack trace and secrets included; `raw-parse` reads the
  status out of two of its three vendor styles.

Then the envelopes (`structured` and the other contracts, docs/formats.md).  What a format
shows is the format; the settings below say how an orchestrator reads it and how tools
without an envelope behave.
"""


def _value(value: Any) -> str:
    return f"`{yaml_value(value)}`"


def _section(
    assumption: Assumption, default_paths: dict[str, list[str]], headline: dict[str, Any], previous: str | None
) -> list[str]:
    default = model_default(assumption)
    lines = [f"### `{assumption.path}`", "", f"* Decides: {assumption.decides}."]
    line = f"* Default: {_value(default)}"
    if assumption.path in headline and headline[assumption.path] != default:
        line += f"; in `scenarios/default.yaml`: {_value(headline[assumption.path])}"
    lines.append(line + ".")
    lines.append("* Plausible range: " + ", ".join(_value(v) for v in assumption.values) + ".")
    same = previous is not None and previous == assumption.reason
    lines.append("* Source or argument: as above." if same else f"* Source or argument: {assumption.reason}")
    paths = default_paths.get(assumption.path)
    if paths:
        values = ",".join(yaml_value(v) for v in assumption.values)
        if all(isinstance(v, (bool, int, float, str)) for v in assumption.values):
            lines.append(f"* Vary it: `fleetchaos sweep --scenario default --param '{paths[0]}={values}'`.")
    return [*lines, ""]


def render() -> str:
    """docs/assumptions.md."""
    from fleetchaos.scenario.load import load_scenario

    default_paths: dict[str, list[str]] = {}
    headline: dict[str, Any] = {}
    for assumption, path, value in concrete(load_scenario("default")):
        default_paths.setdefault(assumption.path, []).append(path)
        headline.setdefault(assumption.path, value)
    out = [_INTRO]
    for group in GROUPS:
        out += [f"## {group}", ""]
        previous = None
        for assumption in ASSUMPTIONS:
            if assumption.group == group:
                out += _section(assumption, default_paths, headline, previous)
                previous = assumption.reason
    return "\n".join(out).rstrip("\n") + "\n"
