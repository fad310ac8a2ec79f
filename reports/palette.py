"""The charts' colours: distinguishable with the common colour-vision deficiencies, and never by hue alone.

About one man in twelve sees red and green alike (protanopia, deuteranopia and their milder
forms), so no chart tells two things apart by a red-green difference.  Categories take
Okabe and Ito's colours, chosen to stay apart under every common deficiency; past the
seven of them a category also changes its line style or hatch (:func:`category`), so
colour is never the only difference.  Quantities take a perceptually uniform colormap
that is also built for colour-vision deficiency (``cividis``): its lightness rises
steadily, so it reads in grey too.  Light to import: no matplotlib here.
"""

from __future__ import annotations

__all__ = [
    "BLACK",
    "BLUE",
    "BLUISH_GREEN",
    "CATEGORICAL",
    "GREY",
    "ORANGE",
    "REDDISH_PURPLE",
    "SEQUENTIAL",
    "SKY_BLUE",
    "VERMILLION",
    "YELLOW",
    "category",
]

#: Okabe and Ito's colours (Color Universal Design, 2008).
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
BLACK = "#000000"
#: A neutral for what is context, not a category (first dispatches, reference lines).
GREY = "#8C8C8C"

#: Categories in order: the most distinct pairs first (yellow, faint on white, last).
CATEGORICAL = (BLUE, ORANGE, BLUISH_GREEN, REDDISH_PURPLE, SKY_BLUE, VERMILLION, YELLOW)

#: The colormap of a quantity (recovery rate per cell): perceptually uniform, readable with a colour-vision deficiency.
SEQUENTIAL = "cividis"

#: Line styles and hatches a category takes on its second and later rounds of :data:`CATEGORICAL`.
_ROUND_STYLES = ("-", "--", ":", "-.")
_ROUND_HATCHES = ("", "///", "...", "xxx")


def category(index: int) -> tuple[str, str, str]:
    """The ``index``-th category's (colour, line style, hatch): past the seven colours the style and hatch change."""
    turn = index // len(CATEGORICAL)
    return (
        CATEGORICAL[index % len(CATEGORICAL)],
        _ROUND_STYLES[turn % len(_ROUND_STYLES)],
        _ROUND_HATCHES[turn % len(_ROUND_HATCHES)],
    )
