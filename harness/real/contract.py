"""Contract conformance: does each real tool report each fault as the benchmarked contract says?

For each bound tool and each fault kind that can hit it, the fault is forced once on
every call the tool's sample makes, and what the sample surfaces (a return value or an
exception) is compared with what the chosen error format renders for that kind: the
error code, category, retry flag, suggested action, a retry-after hint no shorter than
the injected wait, the outcome marked unknown after a timeout, and no planted secret
from the injected vendor error in the text.  Deterministic, no orchestrator needed,
milliseconds per pair.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from fleetchaos.errors import UserError
from fleetchaos.policies.readers import category_of, code_of, retry_after_s_of, retryable_of
from fleetchaos.real.clocks import VirtualClock, installed
from fleetchaos.real.context import ACTIVE
from fleetchaos.real.decision import Decision
from fleetchaos.real.faults import UnboundCall, make_fault
from fleetchaos.real.observe import Surface, surface_of
from fleetchaos.real.runtime import SIM_ONLY, load_real_scenario
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats._vendor import planted, vendor_text
from fleetchaos.sim.interrupts import PASS_THROUGH
from fleetchaos.sim.kinds import KINDS, MASKING, REPORTING, fault_kind
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.sanitise import environment_secrets
from fleetchaos.sim.truth import AttemptReport

__all__ = ["FORCED_WAIT_S", "ContractReport", "ContractRow", "check_contract"]

#: The retry-after wait a forced rate limit or quota carries (the tool must pass on at least this).
FORCED_WAIT_S = 7.0


@dataclass(frozen=True)
class ContractRow:
    """One tool and fault kind: what was expected, what the tool surfaced, and every mismatch."""

    tool: str
    kind: str
    expected: dict
    observed: str
    mismatches: tuple[str, ...]
    fired: int

    @property
    def conforms(self) -> bool:
        """The tool reported the fault as the contract says."""
        return not self.mismatches


@dataclass(frozen=True)
class ContractReport:
    """The tool x kind matrix of a contract check."""

    scenario: str
    errors: str
    rows: tuple[ContractRow, ...]

    @property
    def mismatches(self) -> list[ContractRow]:
        """The rows whose tool missed the contract."""
        return [r for r in self.rows if not r.conforms]

    def assert_conforms(self) -> None:
        """Fail with one line per (tool, kind) that misses the contract, naming the expected fields."""
        bad = self.mismatches
        if bad:
            lines = [f"{r.tool} x {r.kind}: " + "; ".join(r.mismatches) for r in bad]
            raise AssertionError(
                f"fleetchaos contract ({self.errors} errors, scenario {self.scenario}): "
                f"{len(bad)} of {len(self.rows)} tool x kind pairs miss the contract:\n  " + "\n  ".join(lines)
            )

    def to_markdown(self) -> str:
        """``contract.md``: the matrix, then each mismatch with what was expected."""
        kinds = sorted({r.kind for r in self.rows})
        tools = sorted({r.tool for r in self.rows})
        cell = {(r.tool, r.kind): ("ok" if r.conforms else "**mismatch**") for r in self.rows}
        lines = [
            f"# Contract conformance: {self.scenario}",
            "",
            f"Each bound tool met each fault kind that can hit it, forced on every call of its sample; "
            f"what it surfaced is compared with the `{self.errors}` contract the policy was benchmarked on.",
            "",
            "| tool | " + " | ".join(kinds) + " |",
            "|---|" + "---|" * len(kinds),
        ]
        for tool in tools:
            lines.append(f"| {tool} | " + " | ".join(cell.get((tool, k), "-") for k in kinds) + " |")
        lines += ["", "## Mismatches", ""]
        lines += [
            f"* `{r.tool}` x `{r.kind}`: {'; '.join(r.mismatches)} (it surfaced {r.observed})" for r in self.mismatches
        ] or ["None: every tool reports every fault as the contract says."]
        return "\n".join(lines) + "\n"


class _Forcing:
    """An injector that forces one fault kind on every call of one tool (other calls pass untouched)."""

    def __init__(self, tool: str, kind: str, message: str, bindings: Any):
        self.tool = tool
        self.kind = fault_kind(kind)
        self.message = message
        self.bindings = bindings
        self.fired_count = 0
        self.unbound_calls: list[str] = []

    def begin(
        self,
        tool: str,
        item: Hashable | None,
        *,
        attempt: int = 0,
        idempotency_key: str | None = None,
        prompt: str | None = None,
    ):
        if tool != self.tool:
            return None
        kind = self.kind
        wait = FORCED_WAIT_S if kind.retry_after else None
        fault = make_fault(kind, tool, (0, 0, 0, 1), retry_after_s=wait, committed=False, message=self.message)
        return Decision(self, tool, 0, 0, 0, 1, attempt, kind, 0.0, False, fault, sleeps=False)

    def unbound(self, what: str, why: str) -> None:
        self.unbound_calls.append(what)
        if self.bindings is None or self.bindings.unbound == "refuse":
            raise UnboundCall(f"{what}: {why} (contract check)")

    def fired(self, d: Decision) -> None:
        self.fired_count += 1

    def met(self, d: Decision) -> None:
        pass

    def committed(self, d: Decision) -> None:
        pass

    def tool_error(self, d: Decision, error: BaseException) -> None:
        pass

    def sleep_sync(self, seconds: float) -> None:
        pass


def _call_sample(sample: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Run a sample (sync, or async on a fresh virtual-time loop) and catch what it raises."""
    try:
        with installed(VirtualClock()):
            value = sample()
        if inspect.isawaitable(value):
            from fleetchaos.real.clocks import LoopClock, new_virtual_loop

            loop = new_virtual_loop()
            try:
                with installed(LoopClock(loop)):
                    value = loop.run_until_complete(_awaited(value))
            finally:
                loop.close()
        return value, None
    except PASS_THROUGH:
        raise
    except BaseException as exc:  # what the team's tool raises, SystemExit and KeyboardInterrupt included
        return None, exc


async def _awaited(value: Any) -> Any:
    return await value


def expected_observation(errors: str, tool: str, kind: str) -> Observation:
    """What the format renders for ``kind`` failing a one-step dispatch of ``tool``."""
    record = fault_kind(kind)
    report = AttemptReport(
        task_id=0,
        worker=0,
        start_step=0,
        failed_step=0,
        step_names=(tool,),
        failure=kind,
        retry_after_s=FORCED_WAIT_S if record.retry_after else None,
        item_failures=((0, kind),),
    )
    return get_format(errors, seed=0).render(report)


def compare(expected: Observation, surface: Surface, secrets: Iterable[str]) -> tuple[dict, tuple[str, ...]]:
    """(the expected fields, each mismatch of the surface against them)."""
    real = Observation(ok=surface.ok, status="ok" if surface.ok else "failed", worker=0)
    view = SimpleNamespace(**surface.fields)
    real_env = Observation(ok=False, status="failed", worker=0, envelope=view)  # type: ignore[arg-type]  # the readers only getattr() an envelope's fields
    envelope = expected.envelope
    want: dict = {}
    problems: list[str] = []
    if envelope is not None:
        checks = (
            ("error_code", code_of(expected), code_of(real_env)),
            ("category", category_of(expected), category_of(real_env)),
            ("recoverable", retryable_of(expected), retryable_of(real_env)),
            ("suggested_action", getattr(envelope, "suggested_action", None), surface.fields.get("suggested_action")),
        )
        for name, exp, got in checks:
            if exp is None or exp == "":
                continue
            want[name] = exp
            if got != exp:
                problems.append(f"{name}: expected {exp!r}, got {'missing' if got is None else repr(got)}")
        hint = retry_after_s_of(expected)
        if hint is not None:
            want["retry_after_ms"] = f">= {round(hint * 1000)}"
            got_hint = retry_after_s_of(real_env)
            if got_hint is None:
                problems.append(f"retry_after_ms: expected >= {round(hint * 1000)}, got missing")
            elif got_hint + 1e-9 < hint:
                problems.append(f"retry_after_ms: expected >= {round(hint * 1000)}, got {round(got_hint * 1000)}")
        context = getattr(envelope, "context", None) or {}
        if context.get("outcome") == "unknown":
            want["context.outcome"] = "unknown"
            got_ctx = surface.fields.get("context") or {}
            if not isinstance(got_ctx, dict) or got_ctx.get("outcome") != "unknown":
                problems.append("context.outcome: expected 'unknown' (the side effect may have committed), got missing")
    if real.ok:
        problems.insert(0, "surfaced a success: the fault was swallowed (the orchestrator cannot see it)")
    elif envelope is not None and not surface.fields:
        problems.insert(0, f"surfaced a bare failure ({surface.describe(secrets)}) with none of the contract's fields")
    leaked = [s for s in secrets if s in surface.text]
    if leaked:
        problems.append(f"leaked {len(leaked)} planted secret(s) from the vendor error into what it surfaced")
    return want, tuple(problems)


def applicable_kinds(spec: Any, tool: str) -> list[str]:
    """The fault kinds that can hit ``tool`` in the scenario (masking, reporting and simulation-only kinds left out)."""
    from fleetchaos.sim.faults import build_plan

    plan = build_plan(spec, 0)
    steps = [s for t in spec.workload.templates for s in t.steps if s.tool == tool]
    uses_api = any(s.uses_api for s in steps)
    kinds = {r.kind for r in plan.rules if r.tools is None or tool in r.tools}
    if uses_api:
        kinds |= {"rate_limit", "expired_key"}
        if plan.quota_per_day:
            kinds.add("quota_exhausted")
    if spec.fleet.call_timeout_s is not None:
        kinds.add("timeout")
    if any(s.disk_mb for s in steps) and any(plan.disk_full):
        kinds.add("disk_full")
    if any(plan.crashes):
        kinds.add("node_crash")
    if plan.partitions:
        kinds.add("network_partition")
    return [k for k in KINDS if k in kinds and k not in SIM_ONLY and KINDS[k].stage not in (MASKING, REPORTING)]


def check_contract(
    scenario: Any,
    *,
    samples: Mapping[str, Callable[[], Any]],
    errors: str = "structured",
    bindings: Any = None,
    kinds: Iterable[str] | None = None,
    seed: int = 0,
) -> ContractReport:
    """Force each applicable fault kind on each sampled tool and compare what it surfaces with the contract.

    ``samples[tool]()`` makes one real call of ``tool`` (sync, or a coroutine run on a
    virtual-time loop); every call it makes of the bound tool meets the forced fault.
    ``kinds`` replaces the kinds read from the scenario.
    """
    spec, ref = load_real_scenario(scenario)
    from fleetchaos.names import check_formats

    check_formats((errors,), "errors")
    tools = {s.tool for t in spec.workload.templates for s in t.steps}
    unknown = sorted(set(samples) - tools)
    if unknown:
        raise UserError(
            f"samples: {', '.join(unknown)} is not a tool of scenario {ref} (tools: {', '.join(sorted(tools))})"
        )
    secrets = planted(seed).all()
    rows = []
    for tool in sorted(samples):
        wanted = list(kinds) if kinds is not None else applicable_kinds(spec, tool)
        for kind in wanted:
            record = fault_kind(kind)
            if record.stage in (MASKING, REPORTING) or kind in SIM_ONLY:
                raise UserError(
                    f"kinds: {kind} has no contract to check in real-code mode (masking, reporting or simulation-only)"
                )
            report = AttemptReport(task_id=0, worker=0, start_step=0, failed_step=0, step_names=(tool,), failure=kind)
            forcing = _Forcing(tool, kind, vendor_text(report, planted(seed)), bindings)
            token = ACTIVE.set(forcing)
            try:
                value, error = _call_sample(samples[tool])
            finally:
                ACTIVE.reset(token)
            surface = surface_of(value, error, None if bindings is None else bindings.contract_for(tool))
            want, problems = compare(expected_observation(errors, tool, kind), surface, secrets)
            if forcing.fired_count == 0:
                problems = (f"the fault never fired: the sample's call did not reach a binding of {tool!r}", *problems)
            shown = surface.describe((*secrets, *environment_secrets()))
            rows.append(ContractRow(tool, kind, want, shown, problems, forcing.fired_count))
    return ContractReport(spec.name, errors, tuple(rows))
