"""Injection coverage: per bound tool and fault kind, how many faults were drawn, fired and met.

* **drawn**: the keyed decision chose the fault for a call;
* **fired**: the injection point realised it (raised, returned the masked value, began the hang);
* **met**: it reached the caller (an exception or masked value it received, or a hang its own
  timeout cut short); a call cancelled before its fault fired is drawn, not fired.

Calls that reached no binding are listed too (refused by default).  :meth:`InjectionReport.assert_injected`
fails when a tool of the run's tasks met no fault, a drawn fault never fired, or a call
bypassed the bindings: a run that injected nothing must never pass silently.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from fleetchaos.errors import UserError
from fleetchaos.sim.interrupts import policy_text

__all__ = ["InjectionCounter", "InjectionReport", "NotInjectedError"]

OK = "ok"
"""The kind column of calls that met no fault."""


class NotInjectedError(AssertionError):
    """A real run did not exercise what it claims to: a tool met no fault, or a call bypassed the bindings."""


@dataclass(frozen=True)
class InjectionReport:
    """What a real run injected, per tool and kind, and what bypassed the bindings."""

    rows: tuple[tuple[str, str, int, int, int], ...]
    """(tool, kind, drawn, fired, met), sorted; kind ``ok`` counts calls that met no fault (drawn = calls)."""
    unbound: tuple[tuple[str, str, int], ...] = ()
    """(what was called, why it matched no binding, how many times)."""
    tools: tuple[str, ...] = ()
    """The scenario tools the run's tasks use (what every binding must cover)."""
    order_keyed: tuple[str, ...] = ()
    """Tools whose fan-out items were numbered by arrival order (no integer item extractor): threads may reorder them."""
    seed: int | None = None

    def calls(self, tool: str) -> int:
        """Calls of ``tool`` that reached its binding."""
        return sum(r[2] for r in self.rows if r[0] == tool)

    def faults(self, tool: str) -> int:
        """Faults ``tool``'s callers met."""
        return sum(r[4] for r in self.rows if r[0] == tool and r[1] != OK)

    def problems(self, unfaulted: Iterable[str] = ()) -> list[str]:
        """Why the run does not count as injected (empty when it does).

        ``unfaulted`` names tools allowed to meet no fault (a tool no fault of the scenario
        can reach, say); they must still be called through a binding.  A name that is not a
        tool of the run's tasks is a mistake, refused.
        """
        allowed = set(unfaulted)
        unknown = sorted(allowed - set(self.tools))
        if unknown:
            raise UserError(
                f"assert_injected(unfaulted=...): {', '.join(unknown)} is not a tool of the run's tasks "
                f"(tools: {', '.join(self.tools)})"
            )
        out = []
        for tool in self.tools:
            if self.calls(tool) == 0:
                out.append(
                    f"{tool}: no call reached a binding (decorate it with @fleetchaos.tool({tool!r}) "
                    "or route its requests through the run's transport)"
                )
            elif self.faults(tool) == 0 and tool not in allowed:
                out.append(
                    f"{tool}: {self.calls(tool)} call(s), none met a fault (more tasks or seeds, or a harsher scenario)"
                )
        for tool, kind, drawn, fired, _met in self.rows:
            if kind != OK and fired < drawn:
                out.append(f"{tool}: {drawn - fired} drawn {kind} fault(s) never fired")
        for what, why, n in self.unbound:
            out.append(f"{what}: {n} call(s) bypassed the bindings ({why})")
        return out

    def assert_injected(self, unfaulted: Iterable[str] = ()) -> None:
        """Fail unless every tool (but those ``unfaulted`` names) met a fault, every drawn fault fired and no call
        bypassed the bindings."""
        problems = self.problems(unfaulted)
        if problems:
            where = f" (seed {self.seed})" if self.seed is not None else ""
            raise NotInjectedError(f"fleetchaos real run{where} did not inject as bound:\n  " + "\n  ".join(problems))

    def to_csv(self) -> str:
        """``injections.csv``: one row per tool and kind, then the unbound calls.

        Every text cell goes through :func:`fleetchaos.escaping.csv_cell` (no spreadsheet
        formula, no carriage return that splits the row) and the csv module's quoting.
        """
        import csv
        import io

        from fleetchaos.escaping import csv_cell

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(("tool", "kind", "drawn", "fired", "met"))
        writer.writerows((csv_cell(t), csv_cell(k), d, f, m) for t, k, d, f, m in self.rows)
        writer.writerows((csv_cell(what), csv_cell(f"unbound: {why}"), n, 0, 0) for what, why, n in self.unbound)
        return out.getvalue()


@dataclass
class InjectionCounter:
    """Counts of one run, kept by its injector as calls happen (thread-safe)."""

    drawn: Counter = field(default_factory=Counter)
    fired: Counter = field(default_factory=Counter)
    met: Counter = field(default_factory=Counter)
    unbound: Counter = field(default_factory=Counter)
    order_keyed: set = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def report(self, tools: Iterable[str], seed: int | None = None) -> InjectionReport:
        """The report of what was counted so far."""
        with self.lock:
            keys = sorted(set(self.drawn) | set(self.fired) | set(self.met))
            rows = tuple((t, k, self.drawn[t, k], self.fired[t, k], self.met[t, k]) for t, k in keys)
            # what was called is the team's URL or name: its credentials (user:pass@, ?token=) are scrubbed
            unbound = tuple((policy_text(w, 300), why, n) for (w, why), n in sorted(self.unbound.items()))
            return InjectionReport(rows, unbound, tuple(sorted(set(tools))), tuple(sorted(self.order_keyed)), seed)
