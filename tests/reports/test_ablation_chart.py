"""ablation.png: axes with units, tick labels that do not overlap, zero bars that stay visible, gains in points."""

from __future__ import annotations

from itertools import combinations

from fleetchaos.reports.ablation import UNITS, ablation_figure, step_label

STEPS = ("generic", "ablation:failure_type", "ablation:+partial_results", "ablation:+alternatives",
         "ablation:+retry_recommended")  # fmt: skip


def _doc() -> dict:
    """Five steps as the ablation runs them; the first recovers nothing (0.0, a measured zero)."""
    steps = []
    for i, fmt in enumerate(STEPS):
        recovery = 0.0 if i == 0 else 0.2 * i
        step = {
            "format": fmt,
            "metrics": {"common_recovery_rate": recovery, "success_rate": 0.5 + 0.1 * i, "wasted_retries": 40.0 - 10 * i,
                        "silent_failure_rate": 0.2 / (i + 1)},
            "ci": {"common_recovery_rate": [recovery, recovery + 0.01], "success_rate": [0.4, 0.95],
                   "wasted_retries": [10.0, 50.0], "silent_failure_rate": [0.0, 0.3]},
            "gain": {} if i == 0 else {"common_recovery_rate": {"mean": 0.2, "ci": [0.1, 0.3]}},
        }  # fmt: skip
        steps.append(step)
    return {"scenario": "field_ablation", "seeds": [1, 2, 3, 4], "policy": "failure-type-router", "steps": steps}


def test_axes_say_their_units():
    """Rates are drawn in percent and say of what; wasted retries per run; the title names the pp gain."""
    fig = ablation_figure(_doc())
    recovery, success, wasted, silent = fig.axes
    assert recovery.get_ylabel() == UNITS["common_recovery_rate"] == "% of the tasks faulted in any step"
    assert success.get_ylabel() == silent.get_ylabel() == "% of tasks"
    assert wasted.get_ylabel() == "retries per run"
    assert max(b.get_height() for b in success.patches) > 50  # percent, not a proportion
    assert "pp: gain over the previous step" in fig.get_suptitle()


def test_step_labels_are_horizontal_and_do_not_overlap():
    """Each step's tick label (number, then its field, broken at an underscore when long) keeps to its own slot."""
    assert step_label(4, "ablation:+retry_recommended") == "4\n+retry_\nrecommended"
    assert step_label(0, "generic") == "0\ngeneric"
    fig = ablation_figure(_doc())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        assert [t.get_text().split("\n")[0] for t in labels] == ["0", "1", "2", "3", "4"]
        assert all(t.get_rotation() == 0 for t in labels)
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert not any(a.overlaps(b) for a, b in combinations(boxes, 2))


def test_a_zero_bar_is_marked_and_labelled():
    """A measured zero draws a mark where the bar would be and its value; other bars carry value and pp gain."""
    fig = ablation_figure(_doc())
    recovery = fig.axes[0]
    marks = [c for c in recovery.collections if c.get_gid() == "zero-bar"]
    assert len(marks) == 1
    (segment,) = marks[0].get_segments()
    assert segment[0][1] == segment[1][1] == 0.0 and segment[0][0] < 0 < segment[1][0]  # across step 0's slot
    assert marks[0].get_linewidth()[0] >= 2
    texts = {round(t.xy[0]): t.get_text() for t in recovery.texts}
    assert texts[0] == "0.0%" and texts[1] == "20.0%\n+20.0 pp"
    assert not [c for c in fig.axes[1].collections if c.get_gid() == "zero-bar"]  # no zero there, no mark
