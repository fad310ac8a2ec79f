"""The standard-library Student-t quantile against SciPy and against closed forms."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t as scipy_t

from fleetchaos.results.student_t import student_t_quantile

#: Confidence levels across the CLI's range (0.5 to 0.999), and the degrees of freedom seeds give.
CONFIDENCES = (0.5, 0.6, 0.68, 0.75, 0.8, 0.85, 0.9, 0.95, 0.975, 0.98, 0.99, 0.995, 0.998, 0.999)
DEGREES = (*range(1, 41), 49, 50, 99, 100, 199, 499, 999, 2000)

#: SciPy's own error reaches tens of units in the last place (62 at p = 0.995, df = 6).
SCIPY_REL = 2e-14


def test_matches_scipy_over_a_grid_of_confidences_and_degrees_of_freedom():
    """Two-sided quantiles (p = 0.5 + c/2) agree with scipy.stats.t.ppf to SciPy's own precision."""
    worst = 0.0
    for confidence in CONFIDENCES:
        p = 0.5 + confidence / 2.0
        for df in DEGREES:
            ours, theirs = student_t_quantile(p, df), float(scipy_t.ppf(p, df))
            worst = max(worst, abs(ours - theirs) / theirs)
    assert worst < SCIPY_REL


def test_lower_quantiles_are_the_negated_upper_ones_and_the_median_is_zero():
    """t is symmetric: the (1 - p) quantile is minus the p quantile, and the 0.5 quantile is 0."""
    for df in (1, 2, 7, 30):
        assert student_t_quantile(0.5, df) == 0.0
        for p in (0.6, 0.9, 0.999):
            assert student_t_quantile(1.0 - p, df) == -student_t_quantile(p, df)
            assert student_t_quantile(1.0 - p, df) == pytest.approx(float(scipy_t.ppf(1.0 - p, df)), rel=SCIPY_REL)


def test_one_and_two_degrees_of_freedom_match_their_closed_forms():
    """df 1 is Cauchy, tan(pi (p - 1/2)); df 2 is (2p - 1) / sqrt(2 p (1 - p)): equal to the last bit or two."""
    assert student_t_quantile(0.75, 1) == 1.0  # tan(pi/4), exactly
    for p in (0.55, 0.75, 0.9, 0.975, 0.995, 0.9995):
        # tan is evaluated where its argument is small: near pi/2 a float argument's rounding is amplified
        cauchy = math.tan(math.pi * (p - 0.5)) if p < 0.75 else 1.0 / math.tan(math.pi * (1.0 - p))
        assert abs(student_t_quantile(p, 1) - cauchy) <= 4 * math.ulp(cauchy)
        closed = (2 * p - 1) / math.sqrt(2 * p * (1 - p))
        assert abs(student_t_quantile(p, 2) - closed) <= 2 * math.ulp(closed)


def test_many_degrees_of_freedom_approach_the_normal_quantile():
    """At 9,999 degrees of freedom the 97.5% quantile is within 1e-3 of the normal 1.95996 and above it."""
    q = student_t_quantile(0.975, 9_999)
    assert q == pytest.approx(float(scipy_t.ppf(0.975, 9_999)), rel=SCIPY_REL)
    assert 1.959963984540054 < q < 1.961


@pytest.mark.parametrize(
    ("p", "df"), [(0.0, 3), (1.0, 3), (-0.1, 3), (0.9, 0), (0.9, -2), (0.9, 2.5), (0.9, True), (float("nan"), 3)]
)
def test_refuses_probabilities_outside_0_1_and_degrees_that_are_not_whole(p, df):
    """p must lie strictly between 0 and 1 and df be a whole number >= 1: anything else is a ValueError."""
    with pytest.raises(ValueError):
        student_t_quantile(p, df)
