"""The ``scenarios``, ``schema``, ``policies`` and ``faults`` commands: what the catalogue, the models and the registry hold."""

from __future__ import annotations

import re
import sys

import click
from rich.markup import escape

from fleetchaos.cli.common import EXIT_USAGE, stderr_console, stdout_console
from fleetchaos.errors import UserError
from fleetchaos.names import allow_local_imports

__all__ = ["faults", "plain_doc", "policies", "scenarios", "schema"]


@click.group()
def scenarios() -> None:
    """The built-in scenario catalogue."""


#: Characters of a scenario's description ``scenarios list`` shows before an ellipsis.
DESCRIPTION_CHARS = 100


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, a cut one ending with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "\u2026"


@scenarios.command("list")
@click.option(
    "--json", "as_json", is_flag=True, help="print one JSON document: name, description, reveals, fault kinds"
)
def scenarios_list(as_json: bool) -> None:
    """List catalogue scenarios: each name with the start of its description."""
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import load_scenario

    specs = [load_scenario(name) for name in catalogue.names()]
    if as_json:
        import json

        rows = [{"name": n, "description": " ".join(s.description.split()), "reveals": " ".join(s.reveals.split()),
                 "faults": [f.kind for f in s.faults]} for n, s in zip(catalogue.names(), specs)]  # fmt: skip
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(n) for n in catalogue.names())
    for name, spec in zip(catalogue.names(), specs):
        click.echo(f"{name:<{width}}  {_cut(spec.description, DESCRIPTION_CHARS)}")


@scenarios.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="print the validated scenario as JSON, every default filled in")
def scenarios_show(name: str, as_json: bool) -> None:
    """Print a catalogue scenario's file (or, with --json, the scenario as it runs)."""
    import fleetchaos.catalogue as catalogue
    from fleetchaos.scenario.load import load_scenario

    spec = load_scenario(name)  # validates, and gives the did-you-mean message for typos
    if as_json:
        click.echo(spec.model_dump_json(indent=2))
        return
    click.echo(catalogue.path(name).read_text(encoding="utf-8"), nl=False)


@scenarios.command("validate")
@click.argument("files", nargs=-1, required=True)
def scenarios_validate(files: tuple[str, ...]) -> None:
    """Validate scenario files (or catalogue names); exit 0 if all are valid, else 2."""
    from fleetchaos.errors import ScenarioError
    from fleetchaos.scenario.load import load_scenario

    failed = False
    for ref in files:
        try:
            spec = load_scenario(ref)
        except ScenarioError as exc:
            stderr_console().print(f"[red]invalid:[/red] {escape(str(exc))}", highlight=False)
            failed = True
        else:
            click.echo(f"ok: {ref} (scenario {spec.name!r}, {len(spec.faults)} faults)")
    if failed:
        sys.exit(EXIT_USAGE)


@click.command()
@click.argument("what", type=click.Choice(["scenario", "envelope", "assumptions"]))
@click.argument("name", required=False)
@click.option("--markdown", is_flag=True, help="print the scenario file reference (docs/scenarios.md) instead")
def schema(what: str, name: str | None, markdown: bool) -> None:
    """Print the JSON Schema of a scenario file or of a structured error envelope.

    ``schema envelope`` prints the AgentToolError envelope; ``schema envelope NAME``
    any of agent-tool-error, failure-type, subagent-result, tool-envelope.
    ``schema assumptions`` prints the assumptions every figure rests on, each with its
    default, its source and its plausible range (docs/assumptions.md, Markdown).
    """
    import json

    if what == "assumptions":
        if name is not None:
            raise UserError(f"schema assumptions: takes no NAME (got {name!r})")
        from fleetchaos.scenario.assumptions_doc import render as render_assumptions

        click.echo(render_assumptions(), nl=False)
        return
    if markdown:
        if what != "scenario":
            raise UserError("--markdown: only the scenario reference is available as Markdown")
        from fleetchaos.scenario.docs import render

        click.echo(render(), nl=False)
        return
    if what == "scenario" and name is not None:
        raise UserError(f"schema scenario: takes no NAME (got {name!r}); NAME selects an envelope")
    if what == "scenario":
        from fleetchaos.scenario.load import Scenario

        doc = Scenario.model_json_schema()
    else:
        from fleetchaos.scenario.messages import _did_you_mean
        from fleetchaos.sim.envelopes import ENVELOPES

        if name is not None and name not in ENVELOPES:
            raise UserError(
                f"schema envelope: unknown envelope {name!r} (known: {', '.join(sorted(ENVELOPES))})"
                f"{_did_you_mean(name, ENVELOPES)}"
            )
        doc = ENVELOPES[name or "agent-tool-error"].model_json_schema()
    click.echo(json.dumps(doc, indent=2, sort_keys=True))


_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain_doc(text: str) -> str:
    """A docstring as plain text for the terminal: ``code`` -> code, :func:`~a.b.name` -> name, :mod:`a.b` -> a.b."""
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    return _LITERAL.sub(r"\1", text)


@click.group()
def policies() -> None:
    """Recovery policies: built-in, registered by installed packages, or given by import path."""


def _policy_params(info) -> str:
    """A policy's parameters on one line, ``recipe`` for a blocks Policy (its fields are the recipe's parts)."""
    if info.recipe is not None:
        return info.recipe
    return ", ".join(f"{k}={v!r}" for k, v in info.parameters.items()) or "-"


@policies.command("list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def policies_list(as_json: bool) -> None:
    """List built-in policies and those installed packages register (entry point group fleetchaos.policies).

    Entry points are loaded to describe them; one that cannot be loaded is listed with its
    error, and the list goes on.
    """
    from fleetchaos.policies.registry import ENTRY_POINT, list_policies

    infos = list_policies()
    if as_json:
        import json

        click.echo(json.dumps([i.to_dict() for i in infos], indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    from fleetchaos.reports.fitting import fit_columns

    table = Table(title="recovery policies (fleetchaos policies show NAME for details)", show_lines=True, expand=True)
    # Names are what users type: never folded, so the column is as wide as the longest.
    table.add_column("name", no_wrap=True, min_width=max(len(i.name) for i in infos))
    table.add_column("source", overflow="fold", ratio=3)
    table.add_column("description", overflow="fold", ratio=5)
    table.add_column("parameters", overflow="fold", ratio=3)
    for info in infos:
        if info.error is not None:
            description = Text("cannot load: ", style="red") + Text(info.error)
        elif info.shadowed is not None:
            description = Text(f"not used: {info.shadowed}", style="yellow")
        else:
            description = Text(plain_doc(info.description) if info.description else "(no docstring)")
        source = info.source if info.source != ENTRY_POINT else f"{info.source}: {info.origin}"
        table.add_row(Text(info.name), Text(source), description, Text(_policy_params(info)))
    out = stdout_console(fit=False)
    out.print(fit_columns(table, out.width, ["parameters", "source"]))  # an expanding table: its text wraps
    broken = [i.name for i in infos if i.error is not None]
    if broken:
        stderr_console().print(f"warning: {len(broken)} entry point(s) cannot be loaded: {', '.join(broken)}; "
                        "`fleetchaos policies show NAME` says why", highlight=False, markup=False)  # fmt: skip


@policies.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def policies_show(name: str, as_json: bool) -> None:
    """Describe one policy: where it comes from, what it does, its parameters and driver attributes.

    NAME is a built-in name, an entry point name, or an import path pkg.module:Name.
    """
    from fleetchaos.policies.registry import DRIVER_ATTRIBUTES, PolicyLookupError, describe_policy, suggest

    allow_local_imports((name,))
    try:
        info = describe_policy(name)
    except PolicyLookupError as exc:
        match = suggest(name) if ":" not in name else None
        hint = f"; did you mean {match!r}?" if match and match != name else ""
        raise UserError(f"policies show: {exc}{hint}") from None
    if as_json:
        import json

        click.echo(json.dumps(info.to_dict(), indent=2))
        return
    out = [f"name:        {info.name}", f"source:      {info.source} ({info.origin})",
           f"description: {plain_doc(info.description) if info.description else '(no docstring)'}"]  # fmt: skip
    if info.contract is not None:
        out.insert(2, f"contract:    {info.contract} (the error format it was written for)")
    if info.details:
        out += ["", *(f"  {line}" if line else "" for line in plain_doc(info.details).splitlines())]
    if info.recipe is not None:
        out += ["", f"recipe:      {info.recipe}"]
    out += ["", "parameters:" + ("" if info.parameters else " none (not a dataclass, or no fields besides name)")]
    width = max((len(k) for k in info.parameters), default=0)
    out += [f"  {k:<{width}} = {v!r}" for k, v in info.parameters.items()]
    if info.settable:
        out += [
            "",
            f"spec parameters: {', '.join(info.settable)} (e.g. {info.name.partition('(')[0]}({info.settable[0]}=...))",
        ]
    out += ["", "driver attributes:" + ("" if info.driver_attributes else " none (the driver's defaults apply)")]
    for key, value in info.driver_attributes.items():
        shown = value if isinstance(value, str) and value.startswith("method ") else repr(value)
        out.append(f"  {key} = {shown}: {DRIVER_ATTRIBUTES[key]}")
    click.echo("\n".join(out))


@click.group()
def faults() -> None:
    """Fault kinds: what each breaks, how it is reported, and its parameters."""


@faults.command("list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def faults_list(as_json: bool) -> None:
    """List fault kinds: category, error code, effect on the truth and parameters."""
    from fleetchaos.scenario.fault_catalogue import describe_kinds

    kinds = describe_kinds()
    if as_json:
        import json

        doc = [
            {
                "kind": k.kind,
                "category": k.category,
                "error_code": k.error_code,
                "recoverable": k.recoverable,
                "suggested_action": k.suggested_action,
                "effect": k.effect,
                "parameters": [p.name for p in k.parameters],
            }
            for k in kinds
        ]
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.table import Table

    from fleetchaos.reports.fitting import fit_columns

    table = Table(title="fault kinds (fleetchaos faults show KIND for parameter details)", show_lines=True)
    for column in ("kind", "category", "error code", "effect on the truth", "parameters"):
        table.add_column(column, overflow="fold")
    for k in kinds:
        table.add_row(k.kind, k.category, k.error_code, k.effect, ", ".join(p.name for p in k.parameters))
    out = stdout_console(pipe_width=140, fit=False)
    out.print(fit_columns(table, out.width, ["parameters", "category", "error code"]))  # effects wrap in their column


@faults.command("show")
@click.argument("kind")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
@click.option(
    "--errors",
    "errors",
    default=None,
    metavar="FORMAT,...",
    help="instead, show how each of these error formats renders the kind: the text a model reads, in each "
    "vendor style, with its length (planted secrets shown as placeholders)",
)
def faults_show(kind: str, as_json: bool, errors: str | None) -> None:
    """Show one fault kind: its contract, its effect and every parameter (or, with --errors, its renderings)."""
    from rich.table import Table

    from fleetchaos.scenario.fault_catalogue import describe_kind

    if errors is not None:
        _renderings(kind, [n.strip() for n in errors.split(",") if n.strip()], as_json)
        return
    k = describe_kind(kind)
    if as_json:
        import dataclasses
        import json

        doc = {f.name: getattr(k, f.name) for f in dataclasses.fields(k) if f.name != "model"}
        doc["parameters"] = [dataclasses.asdict(p) for p in k.parameters]
        doc["json_schema"] = k.model.model_json_schema()
        click.echo(json.dumps(doc, indent=2))
        return
    out = stdout_console(pipe_width=140, highlight=False, fit=False)
    recoverable = "n/a" if k.recoverable is None else str(k.recoverable).lower()
    out.print(f"[bold]{k.kind}[/bold]: {escape(k.summary)}")
    out.print(
        f"error code {k.error_code} | category {k.category} | recoverable {recoverable} | "
        f"suggested action {k.suggested_action}"
    )
    out.print(f"effect on the truth: {escape(k.effect)}")
    table = Table(show_lines=False)
    for column in ("parameter", "type", "default", "allowed", "description"):
        table.add_column(column, overflow="fold")
    for p in k.parameters:
        table.add_row(*(escape(v) for v in (p.name, p.type, p.default, p.allowed, p.description)))
    out.print(table)


def _renderings(kind: str, names: list[str], as_json: bool) -> None:
    """``faults show KIND --errors A,B``: each format's rendering of the kind (fleetchaos.scenario.kind_renderings)."""
    import dataclasses

    from fleetchaos.scenario.kind_renderings import kind_renderings

    rendered = kind_renderings(kind, names)
    if as_json:
        import json

        click.echo(json.dumps([dataclasses.asdict(r) for r in rendered], indent=2))
        return
    out = stdout_console(pipe_width=140, highlight=False, fit=False)
    for r in rendered:
        leak = f", {r.secrets} planted secret{'s' if r.secrets != 1 else ''} let through" if r.secrets else ""
        out.print(f"[bold]{escape(r.errors)}[/bold] ({r.vendor} client): {r.chars} characters{leak}")
        out.print(escape(r.text), soft_wrap=True)
        out.print()
