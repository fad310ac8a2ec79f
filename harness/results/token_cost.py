"""What a run's tokens cost: the context the turns read, the tokens the calls emit, and the fallback model's.

The primary model's output tokens are priced at ``fleet.usd_per_1k_tokens`` and the context
its turns read at ``fleet.model.usd_per_1k_input_tokens``; the tokens a fallback model
(``fleet.model.fallback``) read and emitted, counted apart on each task's record, at its own
prices (the primary's where it names none).
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetchaos.sim.config import FleetSpec


def token_cost_usd(t: Mapping[str, int], fleet: FleetSpec) -> float:
    """What the tokens cost: the context turns read priced apart from the tokens the calls emit, and the fallback
    model's (``fleet.model.fallback``) at its own prices."""
    read, fallback, fallback_read = t["input_tokens"], t["fallback_tokens"], t["fallback_input_tokens"]
    cost = (t["tokens"] - read - (fallback - fallback_read)) / 1000.0 * fleet.usd_per_1k_tokens
    cost += (read - fallback_read) / 1000.0 * fleet.model.usd_per_1k_input_tokens
    spec = fleet.model.fallback
    if spec is not None and fallback:
        output_price = fleet.usd_per_1k_tokens if spec.usd_per_1k_tokens is None else spec.usd_per_1k_tokens
        input_price = spec.usd_per_1k_input_tokens
        input_price = fleet.model.usd_per_1k_input_tokens if input_price is None else input_price
        cost += (fallback - fallback_read) / 1000.0 * output_price + fallback_read / 1000.0 * input_price
    return cost


__all__ = ["token_cost_usd"]
