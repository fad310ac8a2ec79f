"""The world the model-loop tests share: a three-turn template (the model, then ``lookup``, then ``update``).

Each test's fake provider answers a call of ``lookup``, then of ``update``, then a final answer; the
scenario's template is those turns, so a fault-free loop redoes nothing.  Both tools are the team's
own Python functions (``uses_api: False``): the model is the only API.
"""

from __future__ import annotations

import fleetchaos
from fleetchaos.scenario.load import Scenario


@fleetchaos.tool("lookup")
def lookup(task_id: int) -> str:
    return f"contact-{task_id}"


@fleetchaos.tool("update")
def update(task_id: int) -> str:
    return "ok"


TOOLS = {"lookup": lookup, "update": update}


def loop_scenario(name: str, *, tasks: int, every_s: float = 60.0, faults: list[dict] | tuple = (),
                  workers: int = 2, duration_s: int = 3600, **fleet) -> Scenario:  # fmt: skip
    """``tasks`` tasks of the three-turn template, one every ``every_s`` seconds, with ``faults``."""
    step = {"duration": {"mean_s": 1, "cv": 0}, "uses_api": False}
    return Scenario.model_validate(
        {
            "name": name,
            "duration_s": duration_s,
            "fleet": {"orchestrators": 1, "workers": workers, "api_burst": 1000, **fleet},
            "workload": {
                "templates": [
                    {
                        "name": "sync",
                        "steps": [
                            {"tool": "llm", "duration": {"mean_s": 2, "cv": 0}, "tokens": 300},
                            {"tool": "lookup", **step},
                            {"tool": "update", **step},
                        ],
                    }
                ],
                "arrivals": [{"at_s": every_s * i, "template": "sync"} for i in range(tasks)],
            },
            "faults": list(faults),
        }
    )
