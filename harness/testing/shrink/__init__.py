"""Shrinking: reduce a failing run to a minimal run that still fails.

One module per job: :mod:`~fleetchaos.testing.shrink.properties` (what counts as the
failure), :mod:`~fleetchaos.testing.shrink.materialise` (the run as explicit events),
:mod:`~fleetchaos.testing.shrink.trials` (one cached, bounded simulation per candidate),
:mod:`~fleetchaos.testing.shrink.moves` (the reductions),
:mod:`~fleetchaos.testing.shrink.runner` (:func:`shrink` itself),
:mod:`~fleetchaos.testing.shrink.documents` and :mod:`~fleetchaos.testing.shrink.writer`
(the minimal scenario as YAML, and the regression test).

A *run* is a scenario, a policy, an error format and a seed; a *failing property* is
something that should not happen in it ("task 17 ended as a silent failure",
``recovery_rate<0.7``).  :func:`shrink` reduces the run in four moves, re-simulating a
candidate run for every step (a *trial*) and keeping a reduction only if the property
still holds on it:

1. **Materialise** the run into an explicit world: the tasks become explicit
   ``workload.arrivals`` (arrival time and template of every record), every per-call fault
   the fault log shows a call meeting becomes a narrow window (``[t, t + 1 µs)``) of the
   fault that produced it, disk fills, key expiries and crashes become explicit
   ``events`` (with their cleanup and down times), and rate-limit cuts become explicit
   windows.  The materialised run is checked; a fault kind whose materialised form no
   longer fails (an emergent effect of load, say) keeps its original spec, and the
   result says so.
2. **Delta debugging** (Zeller's ddmin) over the list of fault events, then over the
   tasks.
3. **Shorten**: the horizon (just past the last task and event), the length of disk
   fills, crashes and rate-limit windows, and the number of workers.
4. **Tidy**: try the plain form (each remaining call fault its own spec with
   probability 1, ``workers: [w]``, ``tools: [tool]``); keep it if it still fails.

Identity of a task across trials: ids change when tasks are dropped (ids follow
arrival order), so a task is named by its **arrival time and template** (the pair
:class:`TaskSilent` holds), never by its id.

Fidelity: a per-call fault draws from a stream keyed by the call and by the fault's
position in ``faults``, so a materialised fault keeps its original position and
probability (placeholder faults with probability 0 hold the positions of faults that
were dropped); the same call at the same instant then draws the same outcome, including
which items of a fan-out fail and whether a timeout committed.  Dropping a task that
arrives *before* the failing one renumbers the later tasks, which moves them to other
workers (round-robin dispatch) and changes their draws: such reductions are tried but
usually rejected.

Deterministic: the same run and property give the same minimal run.  The number of
trials is bounded (``max_trials``); when the budget runs out the smallest failing run
found so far is returned.
"""

from fleetchaos.testing.shrink.documents import scenario_document, scenario_yaml
from fleetchaos.testing.shrink.materialise import CallEvent, KeptFault, RateEvent, StateEvent, materialise
from fleetchaos.testing.shrink.moves import ddmin
from fleetchaos.testing.shrink.properties import MetricProperty, TaskSilent, parse_property, task_property
from fleetchaos.testing.shrink.runner import MAX_TRIALS, ShrinkResult, shrink
from fleetchaos.testing.shrink.writer import regression_test

__all__ = [
    "MAX_TRIALS",
    "CallEvent",
    "KeptFault",
    "MetricProperty",
    "RateEvent",
    "ShrinkResult",
    "StateEvent",
    "TaskSilent",
    "ddmin",
    "materialise",
    "parse_property",
    "regression_test",
    "scenario_document",
    "scenario_yaml",
    "shrink",
    "task_property",
]
