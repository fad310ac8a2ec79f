"""A task as a conversation: the model's context and the tokens each turn reads.

The orchestrator's model works through a task in turns.  Each step execution of a step
that uses the API is one turn, a model call through the fleet's model provider (the
provider its API calls go to): it reads the whole context so far (the turn's input
tokens) and emits the step's tool calls (the step's ``tokens`` per call).  The context
starts with the system prompt and grows by every tool result that comes back and by
every error text the arm's format shows the model, so a verbose format costs context on
every later turn: a stack dump more than an envelope, an envelope more than a bare word.
A step that does not use the API is run for the model without a turn of its own; its
result still joins the context.

The bookkeeping is the task's ledger record's (:meth:`~fleetchaos.sim.ledger.TaskRecord.turn`,
:meth:`~fleetchaos.sim.ledger.TaskRecord.called`, :meth:`~fleetchaos.sim.ledger.TaskRecord.read`),
the same for the simulator's dispatch and a real-code runtime; this module holds the
tokeniser rule.  What the model reads of an observation is
:meth:`~fleetchaos.sim.observation.Observation.rendered_text`.  Standard library only.

Today's templates keep their meaning: a step is one turn that plans its calls (one
call, or one per item of a fan-out step), and the step's ``tokens`` are that turn's
output, as they were each call's tokens before.  What a conversation adds to a run's
results is the input tokens (more ``tokens`` and ``token_cost_usd`` per task, more with
every retry and with a wordier error format); when tasks succeed, fail and are retried
does not change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetchaos.sim import _rng
from fleetchaos.sim.observation import Observation

#: The stream of a tool result's size, drawn from the call's key (the same in every arm).
S_RESULT_TOKENS = _rng.stream_id("call:result_tokens")


@dataclass(frozen=True, slots=True)
class Tokeniser:
    """The documented tokeniser rule: a text of n characters costs ceil(n / chars_per_token) tokens."""

    chars_per_token: float = 4.0

    def count(self, text: str) -> int:
        """The tokens ``text`` costs in the context."""
        return math.ceil(len(text) / self.chars_per_token) if text else 0

    def observation(self, obs: Observation) -> int:
        """The tokens the model reads of one rendered outcome (:meth:`~fleetchaos.sim.observation.Observation.rendered_text`:
        its text, else its envelope as compact JSON, else its status word)."""
        return self.count(obs.rendered_text())


@dataclass(frozen=True, slots=True)
class ResultSizes:
    """How many tokens a tool result adds to the context: lognormal around the step's ``result_tokens`` (its median)
    with shape ``sigma``.

    The size is drawn from the call's identity (:func:`fleetchaos.sim._rng.persistent_key` of
    its task, step and item: the same page, file or log whenever it is fetched), or with
    ``redrawn`` from the key of each execution's call (:func:`fleetchaos.sim._rng.call_key`: a
    search whose results change), so the same call returns the same output in every arm; a
    wider shape makes each large output larger (the same normal, scaled): the tail grows
    with ``sigma``, and with it the mean (``result_tokens * exp(sigma**2 / 2)``).  With
    ``sigma`` 0 every result costs ``result_tokens``.
    """

    sigma: float = 0.0
    redrawn: bool = False

    def of(self, median: int, task_key: int, step: int, item: int, call_key: int) -> int:
        """The tokens item ``item`` of step ``step`` of the task keyed ``task_key`` returns, its call keyed
        ``call_key``."""
        return self.tokens(median, call_key if self.redrawn else _rng.persistent_key(task_key, step, item))

    def tokens(self, median: int, key: int) -> int:
        """The tokens the result of the call keyed ``key`` costs, for a step whose typical result costs ``median``."""
        sigma = self.sigma
        if not sigma or not median:
            return median
        return round(median * math.exp(sigma * _rng.normal_pair(key, S_RESULT_TOKENS)[0]))


__all__ = ["S_RESULT_TOKENS", "ResultSizes", "Tokeniser"]
