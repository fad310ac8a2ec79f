"""Every hand-written mutant of tests/mutants.py still names a line the code has, once: a mutant whose
original text moved would stop `tests/mutants.py` before it measures anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import mutants


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.id)
def test_each_mutant_changes_exactly_one_line_the_code_has(mutant):
    source = (mutants.ROOT / mutant.path).read_text(encoding="utf-8")
    assert source.count(mutant.old) == 1, f"{mutant.id}: update its original text to the code's"
    assert mutants.mutated_source(mutant) != source
