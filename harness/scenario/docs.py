"""docs/scenarios.md, generated from the scenario models, the fault catalogue and the scenarios.

Run ``fleetchaos schema scenario --markdown > docs/scenarios.md`` after changing a model,
a fault kind or a catalogue scenario; ``tests/unit/test_scenario_docs.py`` fails while
the file and :func:`render` differ, so the reference cannot drift from the code.
"""

from __future__ import annotations

from pydantic import BaseModel

from fleetchaos.scenario import _yaml
from fleetchaos.scenario.expect import Expectation
from fleetchaos.scenario.fault_catalogue import describe_kinds
from fleetchaos.scenario.fields import parameters
from fleetchaos.scenario.load import (
    MAX_FILE_BYTES,
    MAX_REPORT_TASKS,
    MAX_SCHEDULE_SPANS,
    MAX_TASKS,
    MAX_TOOL_CALLS,
    Scenario,
)
from fleetchaos.scenario.tuned import TunedPolicies
from fleetchaos.sim.config import (
    ApiSpec,
    Arrival,
    ArrivalSchedule,
    Distribution,
    FleetSpec,
    MisreadFactors,
    RatePoint,
    RemediationSpec,
    StepSpec,
    TemplateSpec,
    WorkerOverride,
    WorkloadSpec,
)
from fleetchaos.sim.fault_specs import Burst, NodeEvent, Ramp, Window
from fleetchaos.sim.model_spec import FallbackSpec, ModelSpec
from fleetchaos.sim.provider_spec import ProviderSpec, ServiceShare, SlowdownPoint

#: The models a scenario file is made of, with the key they appear under.
SECTIONS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("top level", Scenario),
    ("fleet", FleetSpec),
    ("fleet.overrides[]", WorkerOverride),
    ("fleet.remediation", RemediationSpec),
    ("fleet.model", ModelSpec),
    ("fleet.model.fallback", FallbackSpec),
    ("fleet.misread_factor", MisreadFactors),
    ("fleet.apis[]", ApiSpec),
    ("fleet.providers[]", ProviderSpec),
    ("fleet.providers[].slowdown[]", SlowdownPoint),
    ("fleet.providers[].service_mixture[]", ServiceShare),
    ("durations (network_latency, page_handling, duration, think)", Distribution),
    ("workload", WorkloadSpec),
    ("workload.templates[]", TemplateSpec),
    ("workload.templates[].steps[]", StepSpec),
    ("workload.arrivals[]", Arrival),
    ("workload.arrival_schedule", ArrivalSchedule),
    ("workload.arrival_schedule.points[]", RatePoint),
    ("expect[]", Expectation),
    ("tuned", TunedPolicies),
)

#: How the ``expect:`` gates are used, after their table (an example and the rules of the commands).
EXPECT_NOTES: list[str] = [
    "```yaml",
    "arms: [team_policy:TeamPolicy/structured]   # what a gate naming no arm judges (optional)",
    "expect:",
    "  - metric: success_rate          # the mean over seeds at least 95%, on decisive evidence",
    "    at_least: 0.95",
    "    evidence: decisive",
    "  - metric: silent_failure_rate   # no seed may report unfinished work as done",
    "    at_most: 0",
    "    statistic: every_seed",
    "  - metric: wasted_retries        # the mean over seeds at most 10",
    "    at_most: 10",
    "  - metric: common_recovery_rate  # every arm on structured errors",
    "    at_least: 0.9",
    '    arm: "*/structured"',
    "```",
    "",
    "Each gate is judged by the one gate rule of [metrics.md](metrics.md#the-gate-rule): the mean (or",
    "the worst seed) against the bound, the evidence stated, a figure with no value failing.",
    "`fleetchaos compare` judges each gate on the arms it names, else on the scenario's `arms`, else",
    "on the arm that leads the headline (the reference arms of a comparison are not gated), and",
    "refuses, before anything runs, a gate whose arms it does not run (exit 2, naming the arms it",
    "runs): add them, or pass `--no-expect`. `fleetchaos run` judges the gates that apply to its one",
    "arm and names the others. Both print one line per verdict (`ok` or `FAILED`, the figure against",
    "the bound, its evidence) and a summary, record the verdicts in the results (`expectations` in",
    "results.json and `--json`) and in the report's *Acceptance criteria* section, and exit 1 when",
    "one failed (also when a `--baseline` gate passed; both are printed). A gate fails on an arm",
    "whose policy errored (unless `--allow-policy-errors`). `sweep`, `ablation`, `tune` and",
    "`robustness` do not judge them, and the replay command of one run says `--no-expect`. In the",
    "pytest plugin, a scenario test fails with each missed gate that applies to its arm (gates for",
    "other arms are not that test's), naming the command that replays the worst seed; the summary",
    "table has an `expect` column. An example:",
    "[examples/suite/chaos/busy_hour.yaml](../examples/suite/chaos/busy_hour.yaml).",
    "",
]

#: How a ``tuned:`` block is made and used, after its table.
TUNED_NOTES: list[str] = [
    "`fleetchaos tune --scenario FILE --errors generic,status,raw,structured` searches each format's",
    "policy on training seeds and prints the block to paste, with the command and the world's",
    "fingerprint. `fleetchaos compare` without `--policies` and `--errors` then runs best against",
    "best from it (each format's policy on its format, the first format's policy on every other",
    "format, and the `references`), `--policies best` uses it for every format it names, and",
    "`--tune` searches again instead. When the world's fingerprint differs from `world` (the file",
    "was edited, or `--param` changed it), the comparison says the policies were tuned for another",
    "world. The default scenario ships one; `make demo` runs it.",
    "",
]

#: The pieces of the shared fault schedule.
SCHEDULE: tuple[type[BaseModel], ...] = (Window, Burst, Ramp, NodeEvent)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _summary(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip().replace("``", "`")
    return "\n".join(" ".join(p.split()) for p in doc.split("\n\n"))


#: Defaults longer than this are described as "see its section" rather than spelt out.
LONG_DEFAULT = 60


def _table(model: type[BaseModel], *, skip: tuple[str, ...] = ()) -> list[str]:
    rows = ["| field | type | default | allowed | description |", "|---|---|---|---|---|"]
    params = parameters(model, skip=skip)
    first = [p for p in params if p.name in ("name", "description", "reveals")]
    for p in first + [p for p in params if p not in first]:
        default = "see its section" if len(p.default) > LONG_DEFAULT else f"`{_cell(p.default)}`"
        if p.default == "":
            default = '`""`'
        rows.append(f"| `{p.name}` | {_cell(p.type)} | {default} | {_cell(p.allowed)} | {_cell(p.description)} |")
    return rows


def _catalogue() -> list[str]:
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import load_scenario

    lines = []
    for name in catalogue.names():
        sc = load_scenario(name)
        kinds = ", ".join(dict.fromkeys(f.kind for f in sc.faults)) or "none"
        lines += [
            f"### `{name}`",
            "",
            " ".join(sc.description.split()),
            "",
            f"*Reveals:* {' '.join(sc.reveals.split())}",
            "",
            f"*Faults:* {kinds}.",
            "",
        ]
    return lines


def render() -> str:
    """The whole of docs/scenarios.md."""
    out = [
        "# Scenario files",
        "",
        "<!-- Generated by `fleetchaos schema scenario --markdown` from the pydantic models "
        "(fleetchaos.scenario.docs). Do not edit by hand: tests/unit/test_scenario_docs.py fails "
        "when this file and the models differ. -->",
        "",
        "A scenario file describes one simulated world: the fleet, the workload, the faults and the",
        "horizon, plus a name, what it models (`description`) and what it is meant to reveal",
        "(`reveals`). Give one to any command with `--scenario path/to/file.yaml`, or name a",
        "catalogue scenario (`fleetchaos scenarios list`). Check a file with",
        "`fleetchaos scenarios validate FILE` (exit 0 when valid, 2 with one message per problem).",
        "For editor completion, `fleetchaos schema scenario` prints the JSON Schema.",
        "",
        "```yaml",
        "name: my_world",
        "description: what this world models",
        "reveals: what it should show",
        "duration_s: 86400",
        "fleet: {workers: 10}",
        "workload: {tasks_per_day: 600}",
        "faults:",
        "  - kind: network_blip",
        "    probability: 0.02",
        "  - kind: disk_full",
        "    events: [{worker: 3, at_s: 32400}]",
        "```",
        "",
        "Times are simulated seconds from midnight of day 0 (fields named `*_s`). Every mapping",
        "refuses unknown fields; every number must be finite and written as a number: a quoted",
        '`"0.1"` is a string and is refused, as is `4.0` for a whole-number field (write `4`); a',
        "whole number is fine where a number is expected (`probability: 1`).",
        "",
        "## Loading rules",
        "",
        "* YAML is loaded safely (no Python objects); JSON is accepted for `.json` files.",
        f"* Files larger than {MAX_FILE_BYTES:,} bytes, nesting deeper than {_yaml.MAX_DEPTH} levels and more",
        f"  than {_yaml.MAX_NODES:,} YAML nodes are refused. Anchors, aliases and merge keys (`&a`, `*a`,",
        "  `<<: *a`) may share values; each alias counts the nodes it stands for, so an alias bomb",
        "  passes the node limit and is refused before anything reads it.",
        f"* Sizes one machine cannot run are refused: more than {MAX_TASKS:,} tasks per run or more",
        f"  than {MAX_TOOL_CALLS:,} tool calls per run (about 80 minutes of CPU for one run), estimated",
        "  before any fault or retry from `tasks_per_day` x days (or, for a closed loop, the clients",
        "  sending a task per think time and round trip, as fast as failing tasks let them) and the",
        "  templates' calls per task; a run that keeps every task (`--report`, `--check-determinism`,",
        f"  `shrink`) at most {MAX_REPORT_TASKS:,} tasks (measured: up to 48 KB a task with its trace);",
        f"  and fault schedules that expand to more than {MAX_SCHEDULE_SPANS:,} windows (rate-limit ones",
        "  included), burst phases and node events per run.",
        "* A mistake is reported as `FILE: PATH: RULE (got VALUE); FIX`, one line per problem,",
        '  with a "did you mean" for misspelt fields, fault kinds, templates, tools and choices.',
        "",
    ]
    for key, model in SECTIONS:
        out += [f"## `{key}`: {model.__name__}", "", _summary(model), ""]
        out += _table(model)
        out.append("")
        if model is Expectation:
            out += EXPECT_NOTES
        if model is TunedPolicies:
            out += TUNED_NOTES
    out += [
        "## Faults",
        "",
        "`faults` is a list; each item names its `kind` and that kind's parameters. Per-call",
        "faults (those with `probability`) share one schedule: a probability per call, optionally",
        "only inside `windows` (recurring with `every_s`) or the bad phases of a `burst`, moving",
        "along a `ramp`, and restricted to `workers`, `tools` and `templates`. State faults change",
        "the fleet (a disk fills, a key is revoked, a node crashes, a partition opens, a quota runs",
        "out) and every call meeting that state fails while it holds. `workers` are worker",
        "indices (0-based); `tools` and `templates` must name tools and templates of the workload.",
        "",
        "`swarm` draws numeric parameters per seed, uniformly from `[low, high]`, so one suite",
        "explores many worlds; both ends must be values the parameter accepts, and whole numbers",
        "for integer parameters:",
        "",
        "```yaml",
        "- kind: network_blip",
        "  swarm: {probability: [0.005, 0.05]}",
        "```",
        "",
        "### Schedule pieces",
        "",
    ]
    for model in SCHEDULE:
        out += [f"#### {model.__name__}", "", _summary(model), ""]
        out += _table(model)
        out.append("")
    kinds = describe_kinds()
    out += [
        "### Fault kinds",
        "",
        "The error code, category and suggested action are what a worker following the structured",
        "contract reports; the effect is what happens to the truth (what the oracle judges).",
        "",
        "| kind | error code | category | recoverable | suggested action |",
        "|---|---|---|---|---|",
    ]
    for k in kinds:
        recoverable = "n/a" if k.recoverable is None else ("yes" if k.recoverable else "no")
        out.append(
            f"| [`{k.kind}`](#{k.kind}) | `{k.error_code}` | {k.category} | {recoverable} | {k.suggested_action} |"
        )
    out.append("")
    for k in kinds:
        out += [
            f"#### {k.kind}",
            "",
            _summary(k.model),
            "",
            f"*Effect on the truth:* {k.effect}",
            "",
            f"*Reported as:* `{k.error_code}` ({k.category}).",
            "",
        ]
        out += _table(k.model, skip=("kind",))
        out.append("")
    out += ["## The catalogue", "", "Built-in scenarios (`fleetchaos scenarios show NAME` prints the file).", ""]
    out += _catalogue()
    return "\n".join(out).rstrip("\n") + "\n"


__all__ = ["render"]
