"""A task template compiled once per run for the hot path: its steps and what each one does.

Standard library only: the world, the call decision and a real-code runtime read the
same compiled templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fleetchaos.sim.config import TemplateSpec, lognormal_params
from fleetchaos.sim.ledger import TaskRecord
from fleetchaos.sim.model_spec import ModelSpec


class SharedBranches(Protocol):
    """What a template's compilation reads of the fault plan: the tools whose pushes share branches."""

    git_branches: int
    git_tools: frozenset[str]
    api_of: dict[str, int]


@dataclass(frozen=True, slots=True)
class Step:
    """A template's step compiled for the hot path."""

    index: int
    name: str
    fan_out: int
    uses_api: bool
    writes_disk: bool
    disk_mb: float
    tokens: int
    mean_s: float
    mu: float
    sigma: float
    needs: tuple[int, ...]
    pushes: bool
    cancels: bool = False
    """The tool stops its work when the client gives up (``after_timeout: cancel``)."""
    result_tokens: int = 0
    """Tokens one successful call's result adds to the conversation's context."""
    api: int = 0
    """The API its calls go to: 0 the model provider, ``i + 1`` the ``i``-th of ``fleet.apis``."""


@dataclass(frozen=True, slots=True)
class Template:
    """A task template compiled for the hot path."""

    index: int
    name: str
    steps: tuple[Step, ...]
    names: tuple[str, ...]
    append_steps: tuple[int, ...]
    deadline_s: float | None
    budget_calls: int | None
    fan_outs: tuple[int, ...] = ()
    """Each step's fan-out (the shape of a task's ledger record)."""
    system_tokens: int = 0
    """The context a task's conversation starts with (``fleet.model.system_prompt_tokens``)."""

    def record(self, task_id: int, title: object, orchestrator: int, arrival_s: float) -> TaskRecord:
        """A fresh ledger record for a task of this template: nothing has taken effect yet."""
        return TaskRecord(
            task_id,
            self.name,
            title,
            orchestrator,
            arrival_s,
            [[0] * fan_out for fan_out in self.fan_outs],
            self.append_steps,
            [0] * len(self.fan_outs),
            context_tokens=self.system_tokens,
        )


def compile_template(
    index: int, template: TemplateSpec, plan: SharedBranches, model: ModelSpec | None = None
) -> Template:
    """A :class:`~fleetchaos.sim.config.TemplateSpec` compiled once per run (``model``: the fleet's, None: its defaults)."""
    if model is None:
        model = ModelSpec()
    steps = []
    names = [s.tool for s in template.steps]
    for si, s in enumerate(template.steps):
        mu, sigma = lognormal_params(s.duration.mean_s, s.duration.cv)
        steps.append(
            Step(
                index=si,
                name=s.tool,
                fan_out=s.fan_out,
                uses_api=s.uses_api,
                writes_disk=s.disk_mb > 0,
                disk_mb=s.disk_mb,
                tokens=s.tokens if s.uses_api else 0,
                mean_s=s.duration.mean_s,
                mu=mu,
                sigma=sigma,
                needs=tuple(names.index(n) for n in s.needs),
                pushes=bool(plan.git_branches) and s.tool in plan.git_tools,
                cancels=s.after_timeout == "cancel",
                result_tokens=model.result_tokens if s.result_tokens is None else s.result_tokens,
                api=plan.api_of.get(s.tool, 0),
            )
        )
    return Template(
        index=index,
        name=template.name,
        steps=tuple(steps),
        names=tuple(names),
        append_steps=tuple(i for i, s in enumerate(template.steps) if s.side_effect == "append"),
        deadline_s=template.deadline_s,
        budget_calls=template.budget_calls,
        fan_outs=tuple(s.fan_out for s in template.steps),
        system_tokens=model.system_prompt_tokens,
    )
