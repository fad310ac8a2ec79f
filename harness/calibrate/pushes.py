"""Push conflicts: how many branches the fleet's pushes share, from which pushes lost a race.

A push reads its branch's head when it starts and writes when it ends; it is rejected
(``git_push_conflict``) when another push to the same branch landed in between.  A trace
does not name the branch, but the races do: a push that ``n`` successful pushes landed
during was spared by all of them with probability (1 - 1/B)^n when each task pushes to one
of ``B`` branches at random (as the simulator draws it).  ``branches`` is the B that makes
the traced outcomes likeliest (1 to :data:`MAX_BRANCHES`); a rejected push no other push
landed during is no race the model makes, and is counted in the comment instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetchaos.calibrate.faults import Context, Fitted

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

#: The most branches the fit considers.
MAX_BRANCHES = 10_000


def _landed_during(
    starts: NDArray[np.float64], ends: NDArray[np.float64], landed: NDArray[np.float64]
) -> NDArray[np.intp]:
    """For each push, how many of the ``landed`` instants fall strictly inside its (start, end)."""
    import numpy as np

    landed = np.sort(landed)
    return np.searchsorted(landed, ends, side="left") - np.searchsorted(landed, starts, side="right")


def branches_mle(raced: ArrayLike, rejected: ArrayLike) -> int:
    """The branch count B that makes the outcomes likeliest: each push had ``raced`` pushes land during it and was
    ``rejected`` or not; P(spared) = (1 - 1/B)^raced."""
    import numpy as np

    raced = np.asarray(raced, dtype=np.int64)
    rejected = np.asarray(rejected, dtype=bool)
    n, where = np.unique(raced, return_inverse=True)  # few distinct counts: the sums go over them
    lost = np.bincount(where, weights=rejected, minlength=len(n))
    spared = np.bincount(where, weights=~rejected, minlength=len(n))
    b = np.arange(1, MAX_BRANCHES + 1, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        # log (1 - 1/B)^n: 0 when no push landed (certainly spared), -inf at B = 1 when one did
        log_spared = np.where(n[None, :] == 0, 0.0, n[None, :] * np.log1p(-1.0 / b))
        log_lost = np.log(-np.expm1(log_spared))
        terms = np.where(lost > 0, lost * log_lost, 0.0) + np.where(spared > 0, spared * log_spared, 0.0)
    ll = np.where(np.isnan(terms), -np.inf, terms).sum(axis=1)
    return int(np.argmax(ll)) + 1


def fit_push_conflicts(ctx: Context) -> list[Fitted]:
    """Push conflicts: the tools that met them and the branches their races show (the contention emerges in the
    simulator)."""
    import numpy as np

    calls = ctx.calls
    code = ctx.kind_code("git_push_conflict")
    rejected = calls.kind == code
    if not rejected.any():
        return []
    tool_ids = np.unique(calls.tool[rejected]).tolist()
    tools = sorted(calls.tools[t] for t in tool_ids)
    pushes = np.isin(calls.tool, tool_ids) & (rejected | (calls.kind == -1))
    starts = calls.start[pushes]
    ends = starts + calls.duration[pushes]
    lost = rejected[pushes]
    raced = _landed_during(starts, ends, ends[~lost])
    unraced = int((lost & (raced == 0)).sum())
    keep = ~(lost & (raced == 0))
    branches = branches_mle(raced[keep], lost[keep])
    comment = (
        f"{int(rejected.sum())} pushes rejected as non-fast-forward; branches: the count that makes the {int(keep.sum())} "
        f"pushes' outcomes likeliest, each spared by the n pushes that landed during it with probability (1 - 1/B)^n"
    )
    if unraced:
        comment += f" ({unraced} rejected with no push landing during them are left out: no race explains them)"
    return [Fitted({"kind": "git_push_conflict", "tools": tools, "branches": branches}, comment)]
