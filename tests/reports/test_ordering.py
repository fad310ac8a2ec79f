"""The verdict of a flip analysis in words, read from the leader at each value tried (never from a missing flip)."""

from __future__ import annotations

from click.testing import CliRunner

from fleetchaos.cli.main import main
from fleetchaos.reports.ordering import ordering_lines
from fleetchaos.results.models import Flip, Robustness

X, Y = "structured on structured", "blind-retry on generic"


def _study(leaders: dict[str, list[str]], clear: dict[str, list[bool]], flips=(), leader: str = X) -> Robustness:
    varied = {path: [0.5 * i for i in range(len(who))] for path, who in leaders.items()}
    return Robustness(varied=varied, flips=list(flips), arms=[Y, X], metric="success_rate", leader=leader,
                      leaders=leaders, clear=clear, seeds=3)  # fmt: skip


def test_held_everywhere_says_so_and_counts_the_clear_leads():
    study = _study({"a": [X, X, X], "b": [X, X]}, {"a": [True, False, True], "b": [True, True]})
    (line,) = ordering_lines(study)
    assert line == (
        f"The ordering held: {X} leads on success_rate at every value tried of a, b; clear at 4 of 5 values, "
        "within the noise of the seeds at a = 0.5."
    )


def test_a_flip_names_both_sides_and_how_clear_each_lead_is():
    flip = Flip(parameter="a", metric="success_rate", ahead=X, behind=Y, holds_at=0.5, flips_at=1.0)
    study = _study({"a": [X, X, Y], "b": [X, X]}, {"a": [True, True, False], "b": [False, False]}, [flip])
    lines = ordering_lines(study)
    assert lines[0] == f"{X} leads on success_rate at every value tried of b; clear at none of 2 values, " \
        "within the noise of the seeds at b = 0, 0.5."  # fmt: skip
    assert lines[1] == f"a: {X} leads on success_rate at 0.5 (clear), {Y} at 1 (within the noise of the seeds)."
    assert not any("held" in line for line in lines)


def test_the_other_arm_ahead_over_a_whole_range_is_no_held_ordering():
    """No flip inside the range, yet the scenario's leader leads at none of its values: said, not called held."""
    study = _study({"a": [Y, Y, Y]}, {"a": [True, True, True]})
    (line,) = ordering_lines(study)
    assert line == f"a: {Y} leads on success_rate at every value tried (0, 0.5, 1), {X} at the scenario's own value."


def test_ties_are_named():
    study = _study({"a": [X, "tie", X]}, {"a": [True, False, True]})
    lines = ordering_lines(study)
    assert lines == [
        f"The ordering held: {X} leads on success_rate at every value tried of a (ties apart); clear at 2 of 2 values.",
        "Tied (neither arm leads) at a = 0.5.",
    ]


def test_compare_with_robustness_prints_what_the_study_found(small):
    """compare --robustness: under the table, the arms ordered and the verdict (before, only the report had it)."""
    result = CliRunner().invoke(
        main,
        ["compare", "--scenario", small, "--seeds", "1", "--jobs", "1", "--no-history",
         "--policies", "blind-retry,structured", "--errors", "structured", "--robustness", "1"],
        env={"COLUMNS": "100"},
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    after = " ".join(result.stdout[result.stdout.index("robustness of ") :].split())  # its lines wrap
    assert "one assumption varied at a time" in after and "1 seed per value" in after
    assert "leads on" in after and ("The ordering held" in after or "at every value tried" in after or " at " in after)
    assert max(map(len, result.stdout.splitlines())) <= 100
