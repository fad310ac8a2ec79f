"""Every fault kind has every entry everywhere: one complete record, a model, and no table with a fall-back.

The records in :mod:`fleetchaos.sim.kinds` are the only table of kinds.  These tests
check that each record is complete and consistent with its stage, that records and
models pair up, that every value a record gives is one the contracts and the world
understand, and that a kind without a record is an error wherever a kind is read.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Literal, get_args

import pytest

from fleetchaos.results.metrics import WASTE_FAMILIES, error_code
from fleetchaos.sim.envelope import ErrorCategory
from fleetchaos.sim.envelopes import FailureType, SubagentResult
from fleetchaos.sim.fault_specs import FAULT_MODELS, _by_catalogue_order, _CallFault
from fleetchaos.sim.formats import get_format
from fleetchaos.sim.formats.registry import builtin_formats
from fleetchaos.sim.kind_record import EXHAUSTED_RESOURCE, PERMANENT_ERROR, STILL_RATE_LIMITED, TRANSIENT_AGAIN
from fleetchaos.sim.kinds import (
    BATCH,
    CAUSES,
    KINDS,
    MASKING,
    PERSISTENT,
    PERSISTENT_SCOPES,
    REMEDIES,
    REPORTING,
    SOURCE,
    TRANSIENT,
    FailureContract,
    FaultKind,
    UnknownFaultKind,
    Waste,
    fault_kind,
    kinds_in,
    waste_families,
)
from fleetchaos.sim.kinds_model import DETERMINISTIC_DENIAL, MODEL_OUTPUT_AGAIN
from fleetchaos.sim.remediation import REPAIRS
from fleetchaos.sim.transport import TRANSPORT_KINDS, TransportRetry
from fleetchaos.sim.truth import FAILURES, AttemptReport
from fleetchaos.sim.waste import RetryJudge

ROOT = Path(__file__).resolve().parents[2]
FIELDS = [f.name for f in dataclasses.fields(FaultKind) if f.init]


def test_every_kind_has_a_record_and_a_model_in_one_order():
    """KINDS and FAULT_MODELS name the same 34 kinds in the same (catalogue) order, the core five first."""
    assert list(KINDS) == list(FAULT_MODELS)
    assert len(KINDS) == 34
    assert list(KINDS)[:5] == ["network_blip", "timeout", "rate_limit", "disk_full", "expired_key"]
    assert all(record.name == name for name, record in KINDS.items())


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_record_without_any_one_of_its_fields_is_refused(kind):
    """Dropping any field from any kind's record is an error when the record is built (no field has a default)."""
    full = {name: getattr(KINDS[kind], name) for name in FIELDS}
    assert FaultKind(**full) == KINDS[kind]
    for name in FIELDS:
        with pytest.raises(TypeError, match=name):
            FaultKind(**{k: v for k, v in full.items() if k != name})


@pytest.mark.parametrize(
    "kind, change, rule",
    [
        ("validation_error", {"persistent_scope": None}, "persistent_scope is required"),
        ("network_blip", {"persistent_scope": SOURCE}, "persistent_scope is required"),
        ("not_found", {"persistent_scope": "per_moon_phase"}, "is not one of"),
        ("silent_suppression", {"wire": KINDS["timeout"].wire}, "masking or reporting kind"),
        ("disk_full", {"failure_type": None}, "required for a kind reported as a failure"),
        ("network_blip", {"outcome_unknown": True}, "either fails fast"),
        ("timeout", {"outcome_unknown": False}, "either fails fast"),
        ("partial_batch", {"fail_fast_s": None}, "fail_fast_s is required"),
        ("rate_limit", {"waste": Waste("transient", "x", "y")}, "retry-after hint"),
        ("validation_error", {"waste": Waste("state", "x", "y")}, "only a state kind"),
        ("disk_full", {"waste": Waste("still_full", "x", "y")}, "waste.cause"),
        ("disk_full", {"remedy": "reboot"}, "remedy"),
        ("schema_drift", {"contract": FailureContract("SKEW", "reporting", False, "none")}, "recoverable is None"),
        ("timeout", {"stage": "sometimes"}, "stage"),
    ],
)
def test_a_record_that_contradicts_its_stage_is_refused(kind, change, rule):
    """A record whose fields contradict its stage fails when it is built, naming the kind and the rule."""
    with pytest.raises(ValueError, match=rule) as raised:
        dataclasses.replace(KINDS[kind], **change)
    assert repr(kind) in str(raised.value)


def test_a_model_without_a_record_or_a_record_without_a_model_fails_at_import():
    """fault_specs pairs models with records when it is imported: either one missing is an error naming the kind."""
    models = dict(FAULT_MODELS)
    del models["not_found"]
    with pytest.raises(RuntimeError, match=r"no model for \['not_found'\]"):
        _by_catalogue_order(models)
    with pytest.raises(RuntimeError, match=r"no record for \['extra_kind'\]"):
        _by_catalogue_order({**FAULT_MODELS, "extra_kind": _CallFault})


def _literal(annotation) -> set[str]:
    """The strings of a Literal, also inside Optional."""
    args = get_args(annotation)
    if getattr(annotation, "__origin__", None) is Literal:
        return set(args)
    return {a for arg in args for a in _literal(arg)}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_record_speaks_every_contracts_vocabulary(kind):
    """Each value a record gives is one the contract it feeds accepts: category, failure type, subagent category, waste family."""
    record = KINDS[kind]
    assert record.contract.error_code.isupper() and " " not in record.contract.error_code
    if record.stage == REPORTING:
        assert (record.contract.category, record.contract.recoverable) == ("reporting", None)
        return
    assert record.contract.category in get_args(ErrorCategory)
    if record.stage == MASKING:
        assert (record.failure_type, record.subagent_category, record.wire) == (None, None, None)
        return
    assert record.failure_type in get_args(FailureType)
    assert record.subagent_category in _literal(SubagentResult.model_fields["error_category"].annotation)
    assert 400 <= record.wire.status <= 599 and record.wire.reason and record.wire.errno.isupper()
    if record.waste is not None:
        assert record.waste.family in (
            PERMANENT_ERROR,
            STILL_RATE_LIMITED,
            EXHAUSTED_RESOURCE,
            TRANSIENT_AGAIN,
            DETERMINISTIC_DENIAL,
            MODEL_OUTPUT_AGAIN,
        )
        assert WASTE_FAMILIES[record.waste.reason] == record.waste.family


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_has_the_model_fields_its_stage_reads(kind):
    """The world reads a per-call kind's rule from its model: each stage's model has the fields its realisation uses."""
    record, model = KINDS[kind], FAULT_MODELS[kind]
    fields = set(model.model_fields)
    per_call = record.stage in (PERSISTENT, TRANSIENT, BATCH, MASKING)
    assert issubclass(model, _CallFault) == per_call
    if record.stage == TRANSIENT and record.outcome_unknown:
        # timeout_s: a field, or a property over one (an isError result's duration is the time its tool ran)
        assert "committed_probability" in fields
        assert "timeout_s" in fields or isinstance(getattr(model, "timeout_s", None), property)
    if record.persistent_scope == SOURCE:
        assert {"alternatives", "alternative_missing_probability"} <= fields
    if record.stage == BATCH:
        assert {"failures", "persistent"} <= fields


def test_every_word_of_the_vocabulary_is_used_and_realised():
    """Each cause has a judge check, each remedy a repair, each scope a record: no dead or missing vocabulary."""
    judge = RetryJudge(calls=None, run_key=0, shared=None)  # type: ignore[arg-type]
    assert set(judge._checks) == set(CAUSES) == {k.waste.cause for k in KINDS.values() if k.waste}
    assert set(REPAIRS) == set(REMEDIES) == {k.remedy for k in KINDS.values() if k.remedy}
    assert {k.persistent_scope for k in KINDS.values() if k.persistent_scope} == set(PERSISTENT_SCOPES)


def test_the_views_of_the_records_agree_with_them():
    """FAILURES, TRANSPORT_KINDS and the waste families are read from the records, not kept beside them."""
    assert list(FAILURES) == [k for k in KINDS if k not in kinds_in(REPORTING)]
    assert all(FAILURES[k] == KINDS[k].contract for k in FAILURES)
    assert "schema_drift" not in FAILURES and "no_such_kind" not in FAILURES
    assert set(TRANSPORT_KINDS) == {k for k, r in KINDS.items() if r.transport_retryable}
    assert TransportRetry().on == TRANSPORT_KINDS
    assert waste_families() == WASTE_FAMILIES


def _failed(kind: str) -> AttemptReport:
    return AttemptReport(
        task_id=0,
        worker=0,
        start_step=0,
        failed_step=0,
        step_names=("fetch",),
        failure=kind,
        item_failures=((0, kind),),
    )


#: Formats that never read the failure's kind (a status word; a suppressed "ok").
KIND_BLIND = {"generic", "empty-success", "fabricated-defaults"}


@pytest.mark.parametrize("format_name", sorted(set(builtin_formats()) - KIND_BLIND))
def test_an_unknown_kind_is_an_error_in_every_format_that_reads_kinds(format_name):
    """A format asked to render a kind with no record raises UnknownFaultKind instead of inventing a default."""
    with pytest.raises(UnknownFaultKind, match="no_such_kind"):
        get_format(format_name).render(_failed("no_such_kind"))


def test_an_unknown_kind_is_an_error_in_the_lookups_metrics_and_transport():
    """fault_kind, the metrics' error code and a transport layer's kinds refuse a kind without a record."""
    with pytest.raises(UnknownFaultKind, match="needs a FaultKind record"):
        fault_kind("no_such_kind")
    with pytest.raises(UnknownFaultKind):
        error_code("no_such_kind")
    with pytest.raises(ValueError, match="no_such_kind"):
        TransportRetry(on=frozenset({"no_such_kind"}))


def test_a_masking_kind_is_never_rendered_as_a_failure():
    """Formats that need a kind's wire text refuse a masking kind: its call looked successful, so it is never a failure."""
    for name in ("raw", "tool-envelope", "subagent-result", "failure-type"):
        with pytest.raises(ValueError, match="never reported as a failure"):
            get_format(name).render(_failed("silent_suppression"))


#: Modules that once kept their own table of kinds; now none may spell one out.
KIND_READERS = [
    *sorted((ROOT / "simulated_fleet").rglob("*.py")),
    ROOT / "harness" / "results" / "metrics.py",
    ROOT / "harness" / "scenario" / "fault_catalogue.py",
]


@pytest.mark.parametrize("path", KIND_READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_of_the_simulator_keeps_its_own_table_of_kinds(path):
    """Outside kinds.py, no collection literal lists two or more kind names and no code compares with a kind name."""
    if path.name == "kinds.py":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    literal_slices = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # Literal[...] types
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Dict, ast.Set, ast.Tuple, ast.List)) and id(node) not in literal_slices:
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            names = [e.value for e in items if isinstance(e, ast.Constant) and e.value in KINDS]
            if len(names) >= 2:
                found.append(f"line {node.lineno}: {names}")
        if isinstance(node, ast.Compare):
            names = [c.value for c in node.comparators if isinstance(c, ast.Constant) and c.value in KINDS]
            found += [f"line {node.lineno}: compares with {name!r}" for name in names]
    assert not found, f"{path.name} keeps knowledge of kinds outside their records: {found}"
