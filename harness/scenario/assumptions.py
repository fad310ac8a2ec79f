"""The assumptions a headline rests on: each a scenario setting with its default, its reason and its range.

Every setting that can move an outcome and that nothing measures (what a failure reveals, how a partial batch
is reported, whether workers checkpoint, how often envelopes lie, how a provider admits calls, what a page or a
silent failure costs) is one :class:`Assumption` here: its scenario path, what it decides, the source or argument
for its default, and the plausible range a sensitivity study varies it over.  The default itself is never written
twice: it is read from the scenario models (:func:`model_default`) and from
``scenarios/default.yaml`` (the headline's value, :func:`headline_value`).

:func:`concrete` turns the paths into ``--param`` paths of a given scenario (one per
provider, one per ``wrong_envelope`` rule) with their values, for ``sweep`` and
``robustness``.  docs/assumptions.md is :func:`fleetchaos.scenario.assumptions_doc.render` (``fleetchaos schema
assumptions``); a test keeps it equal to this table and checks every format, cost and admission setting is in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from fleetchaos.scenario.assumption_record import GROUPS, PATH_PART, Assumption
from fleetchaos.scenario.assumptions_mcp import MCP_ASSUMPTIONS
from fleetchaos.scenario.fields import FieldAt, resolve

if TYPE_CHECKING:
    from fleetchaos.scenario.load import Scenario

__all__ = [
    "ASSUMPTIONS",
    "GROUPS",
    "Assumption",
    "concrete",
    "field_of",
    "headline_value",
    "model_default",
    "settings_document",
]


def _factor(setting: str, what: str, values: tuple[float, ...]) -> Assumption:
    return Assumption(
        f"fleet.misread_factor.{setting}",
        GROUPS[0],
        f"how easily a failure in {what} is read as a success (a factor on misread_probability)",
        "A judgement of how visible the format makes a failure, not a measurement (docs/formats.md): "
        "the table in fleetchaos.sim.misread gives each factor's reason.",
        values,
    )


_PAGE = (
    "Half an hour of hands-on time: the paged engineer reads the escalation, finds the cause, fixes or reruns "
    "the task, hands it back and returns to the work the page interrupted. The wait before the human looks is "
    "not billed: it is when the work happens, not how much of it there is (a page used to be billed at the "
    "human's 2-hour response delay, which made paging ten times dearer than any other outcome by the wait "
    "alone). The range runs from an acknowledge-and-rerun (5 minutes) to a whole incident with its follow-up "
    "(the Google SRE book, 'Being On-Call': about 6 hours per incident, root cause, remediation and postmortem "
    "included)."
)

#: Every assumption, grouped (:data:`GROUPS`), in the order docs/assumptions.md gives them.
ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        "fleet.misread_probability",
        GROUPS[0],
        "how often an LLM orchestrator reads a reported failure as a success and claims the task done",
        "004's CRM agent summarised 'sync complete' over visible 403 error blobs; no source gives a rate for a "
        "bare failure word. One misread in twenty before the format's factor (raw x3, envelopes x0.2) is a "
        "judgement; the study runs it from never to one in five.",
        (0.0, 0.025, 0.05, 0.1, 0.2),
    ),
    _factor("generic", "the bare word 'failed'", (0.5, 1.0, 2.0)),
    _factor("status", "an HTTP status and exception class", (0.5, 1.0, 2.0)),
    _factor("raw", "raw vendor text", (1.0, 3.0, 5.0)),
    _factor("structured", "the AgentToolError envelope", (0.0, 0.2, 1.0)),
    _factor("failure_type", "the failure-type envelope", (0.0, 0.2, 1.0)),
    _factor("subagent_result", "the subagent-result envelope", (0.0, 0.2, 1.0)),
    _factor("tool_envelope", "the tool envelope", (0.0, 0.05, 1.0)),
    _factor("agent_sdk", "an agent SDK's default tool-error text", (0.5, 1.0, 2.0)),
    _factor("langgraph", "LangGraph ToolNode's error text", (0.5, 1.0, 2.0)),
    _factor("mcp", "an MCP tool error (isError and its text)", (0.2, 0.5, 1.0)),
    _factor("mcp_structured", "an MCP tool error with structuredContent", (0.0, 0.2, 1.0)),
    _factor("jsonrpc", "a JSON-RPC error object", (0.0, 0.2, 1.0)),
    _factor("problem_details", "an RFC 9457 problem", (0.0, 0.2, 1.0)),
    _factor("google_rpc", "a google.rpc.Status", (0.0, 0.2, 1.0)),
    *MCP_ASSUMPTIONS,
    Assumption(
        "fleet.partial_batch",
        GROUPS[1],
        "whether a tool without an envelope (generic, status, raw) reports a fan-out step some of whose items "
        "failed as failed, hides it as ok (partial work passed on as a success), or reports it with a count",
        "failed: the fan-out primitives a tool is written with (Python's asyncio.gather, JavaScript's Promise.all) "
        "raise the first failure of the batch unless the author catches each item, and 001 describes the "
        "unstructured case so ('returning only \"timeout error\" loses the 3 successful results'); hiding the "
        "failure takes code that swallows it (003's silent-suppression anti-pattern, modelled on its own by the "
        "empty-success formats). ok is the 'sync complete' of 004 and the research_fanout and crm_sync_403 "
        "scenarios; count is a tool that says '2 of 5 items failed' without an envelope.",
        ("failed", "ok", "count"),
    ),
    Assumption(
        "fleet.checkpoints",
        GROUPS[1],
        "whether a dispatch after a failure resumes where the last one stopped (resume tokens, steps that skip "
        "work already done) whatever the format, or only when a policy reads the progress from an envelope",
        "Off: checkpointing is engineering a team builds, and the team whose tools return no envelope has not "
        "built this either; 001 describes that fleet as one whose orchestrator 'retries from scratch'. On is the "
        "team that made its steps resumable without an error contract.",
        (False, True),
    ),
    Assumption(
        "fleet.cut_call_committed_probability",
        GROUPS[1],
        "whether a call the client's timeout cut while it ran had already taken effect (a retry then duplicates "
        "a non-idempotent one)",
        "0.5: the client cannot tell which side of the commit the cut fell, and the midpoint says exactly that; "
        "the timeout fault's committed_probability in default.yaml is 0.5 for the same reason.",
        (0.0, 0.5, 1.0),
    ),
    *(
        Assumption(
            f"faults[wrong_envelope].{way}",
            GROUPS[2],
            decides,
            "The reference documents warn of each way an envelope lies and measure none: a vendor exception "
            "mapped to the wrong code at the adapter boundary (004), a failure marked recoverable that is not "
            "(000: 'do not mark everything recoverable'), a stale retry-after passed through, an optional field an "
            "older worker leaves out (000: contract drift). The model's default is 0 (truthful envelopes); "
            "default.yaml sets one failure in twenty for each way, rare enough to pass a review of a versioned "
            "shared contract (000's premise). The range ends at the imperfect_contracts scenario's rate.",
            values,
        )
        for way, decides, values in (
            ("misclassify", "how often an envelope names another failure kind", (0.0, 0.05, 0.1)),
            ("mark_recoverable", "how often a permanent failure is reported recoverable", (0.0, 0.05, 0.5)),
            ("wrong_retry_after", "how often a retry-after hint is off by a factor", (0.0, 0.05, 0.3)),
            ("omit_partial_success", "how often an envelope leaves out what completed", (0.0, 0.05, 0.2, 0.5)),
        )
    ),
    Assumption(
        "fleet.providers[].admission",
        GROUPS[3],
        "whether a full provider refuses a call past max_in_flight at once (503 or 429) or queues it without limit",
        "refuse: the public model APIs shed load when they are full (a 429 or a 503/overloaded error) instead of "
        "holding calls for an unbounded time; queue is an internal backend or a batch API that takes every call "
        "and serves it late, where clients time out instead of being refused.",
        ("refuse", "queue"),
    ),
    Assumption(
        "fleet.providers[].servers",
        GROUPS[3],
        "how many calls a provider serves at once, first come first served (none: calls never wait for each other)",
        "None in the model (no provider declares a capacity unless a scenario says so); default.yaml declares 2, "
        "sized so the provider is 59% busy over the day and 88% in the afternoon peak (the arithmetic is in the "
        "file): loaded enough that queues form at the peak and not at night.",
        (1, 2, 4),
    ),
    Assumption(
        "fleet.providers[].max_in_flight",
        GROUPS[3],
        "how many calls a provider holds (in service and queued) before it refuses new ones",
        "None in the model; default.yaml holds 12 (two in service, ten queued): a queue a few calls deep per "
        "server, so a burst waits seconds and a flood is shed.",
        (4, 12, 48),
    ),
    Assumption(
        "fleet.providers[].overload_status",
        GROUPS[3],
        "whether a refusal is a 503 (no retry-after hint) or a 429 (with the instant the provider has room)",
        "503, the status of a server that is over capacity; 429 is a provider that also says when to come back.",
        (503, 429),
    ),
    Assumption(
        "fleet.providers[].reject_cost_s",
        GROUPS[3],
        "how much work a refusal still costs the provider (a refusal storm slows the calls it serves)",
        "0: refusing is cheap next to serving a model call; the range lets refusals cost a tenth of a second to "
        "a second of a server's time.",
        (0.0, 0.1, 1.0),
    ),
    Assumption(
        "fleet.providers[].service_mixture",
        GROUPS[3],
        "whether some of a provider's calls take far longer than the rest (bimodal service: a cache miss, a long "
        "prompt)",
        "None: service is the step's duration alone, as the traces it was calibrated from give it. The range "
        "tries one call in twenty taking ten times as long, the bimodal service under which a queue that "
        "discards late replies collapses (scenarios/omission_collapse.yaml).",
        ([], [{"probability": 0.05, "factor": 10.0}]),
    ),
    Assumption(
        "fleet.providers[].slowdown",
        GROUPS[3],
        "whether a provider's service grows slower the more calls are in it",
        "No curve: service time does not depend on load, so queueing alone makes a busy provider slow; a curve "
        "is a provider whose throughput degrades under contention (memory pressure, batching limits).",
        ([], [{"in_flight": 1, "factor": 1.0}, {"in_flight": 12, "factor": 2.0}]),
    ),
    Assumption(
        "fleet.call_timeout_s",
        GROUPS[3],
        "how long a client waits for a tool call (queueing included) before it gives up and its outcome is unknown",
        "None in the model (no timeout unless a scenario sets one); default.yaml waits 180 s, three times its "
        "longest step (90 s), the usual margin of a client timeout over the work it guards.",
        (60.0, 180.0, 600.0),
    ),
    Assumption(
        "fleet.late_reply_s",
        GROUPS[3],
        "whether a client counts a reply that comes late as failed (and resubmits) though the work took effect",
        "None: a reply counts whenever it comes, since discarding a reply the client waited for is a choice of "
        "the client's code, not something every fleet does; a client that does so feeds the omission collapse "
        "(scenarios/omission_collapse.yaml). The range tries a client that discards replies after a minute or two.",
        (None, 60.0, 120.0),
    ),
    Assumption(
        "fleet.page_handling.mean_s",
        GROUPS[4],
        "what a page costs: the paged human's hands-on time per escalation, at usd_per_human_hour",
        _PAGE,
        (300.0, 1800.0, 7200.0, 21600.0),
    ),
    Assumption(
        "fleet.usd_per_human_hour",
        GROUPS[4],
        "the price of an hour of a paged human's hands-on time (the undone and silent-failure prices are set in "
        "USD, argued from the same hour)",
        "$120: an engineer's loaded cost (salary, benefits and overhead) per working hour, in the range of a "
        "US software engineer's; the study halves and doubles it.",
        (60.0, 120.0, 240.0),
    ),
    Assumption(
        "fleet.usd_per_undone_task",
        GROUPS[4],
        "what a task the fleet did not finish costs (claimed failed, partial or dead-lettered, or never reported)",
        "$60: someone takes the task up from its failure report and finishes it, the same half hour of a "
        "person's time as a page (at $120 an hour), without the interruption. So with the defaults paging "
        "instead of giving up costs about the same, and neither is priced by how long anyone waits. The range "
        "runs from a task nobody redoes to two hours of redoing it by hand.",
        (0.0, 60.0, 240.0),
    ),
    Assumption(
        "fleet.usd_per_silent_failure",
        GROUPS[4],
        "what a task claimed a success whose work did not fully take effect costs: the costliest outcome",
        "$480, four hours at $120: the undone work (half an hour) plus finding a failure no error reported (004's "
        "half-updated CRM records surfaced as support tickets blaming 'the AI'), tracing what it touched and "
        "repairing what acted on it. The range runs from one found at once (as an undone task) to two working "
        "days (found by a customer).",
        (60.0, 480.0, 1920.0),
    ),
    Assumption(
        "fleet.usd_per_refused_call",
        GROUPS[4],
        "what a request a provider refused (429, 503) costs on top of its tool call",
        "$0: model APIs bill the tokens they process and a refused request processes none; the call itself is "
        "already priced at usd_per_tool_call. A provider that bills refusals is the range's other end.",
        (0.0, 0.001, 0.01),
    ),
    Assumption(
        "fleet.usd_per_1k_tokens",
        GROUPS[4],
        "the price of model tokens consumed by the calls that ran",
        "$0.01 per thousand: a mid-range model's blended input and output price; the range spans a small model "
        "to a frontier one.",
        (0.001, 0.01, 0.06),
    ),
    Assumption(
        "fleet.model.usd_per_1k_input_tokens",
        GROUPS[4],
        "the price of the context each model turn reads (the system prompt, tool results and error texts so far)",
        "$0.0025 per thousand: a mid-range model's input price; the range spans a small model to a frontier one.",
        (0.00015, 0.0025, 0.015),
    ),
    Assumption(
        "fleet.model.give_up_probability",
        GROUPS[0],
        "the chance the model stops on a failure before its recovery policy decides (scaled by the format's "
        "misread factor and by attempt_factor per failed attempt already in context)",
        "Off: the policy alone decides what follows a failure, as the reference documents' fleets assume; "
        "published agent studies see models abandon tasks after errors, so the range reaches one in ten.",
        (0.0, 0.02, 0.1),
    ),
    Assumption(
        "fleet.model.attempt_factor",
        GROUPS[0],
        "how much each failed attempt already in the model's context multiplies its chances of misreading, "
        "giving up and retrying past a stop",
        "1 (no change): the neutral value; agent studies find recovery falls with each failed attempt, which "
        "factors above 1 express.",
        (1.0, 1.5, 2.0),
    ),
    Assumption(
        "fleet.model.context_window_tokens",
        GROUPS[3],
        "how much context a model turn may read before it is refused (context_overflow: no call, and a retry rereads it)",
        "128k tokens: the common hosted models' small and mid tiers; small open models 8k to 32k, large tiers to 1M.",
        (16_000, 128_000, 1_000_000),
    ),
    Assumption(
        "fleet.model.result_tokens_sigma",
        GROUPS[3],
        "how heavy-tailed tool outputs are (each result lognormal around result_tokens), which drives overflow",
        "0 (every result costs result_tokens), the model as first measured; real outputs are heavy-tailed (a whole "
        "file, a log beside a status line): 1 to 2 puts one result in a hundred at 10 to 100 times the typical one.",
        (0.0, 1.0, 2.0),
    ),
    Assumption(
        "fleet.model.result_tokens_repeat",
        GROUPS[3],
        "whether a tool call made again returns an output of the same size (same) or one drawn anew (redrawn): "
        "whether a restart after an overflow, or after a compaction, meets the same large output again",
        "same: a retried read fetches the same page, file or log; a search whose results change is the exception. "
        "It decides whether compacting without a resume point gets past an overflow (docs/scenarios.md, "
        "context_pressure).",
        ("same", "redrawn"),
    ),
    Assumption(
        "fleet.model.compaction.summary_tokens",
        GROUPS[5],
        "the size of the summary a context compaction leaves in place of the conversation: how much room the "
        "retried turn has",
        "1,000 tokens, a judgement: a page of notes on what the summarised turns found; summarisation middleware "
        "asks for the most important context without fixing a size.",
        (300, 1000, 5000),
    ),
    Assumption(
        "fleet.model.compaction.keep_tokens",
        GROUPS[5],
        "how much of the latest conversation a compaction keeps verbatim beside its summary",
        "0: a compact command summarises everything after the system prompt; summarisation middleware keeps the "
        "last 6 to 20 messages by default, a few thousand tokens of tool results.",
        (0, 2000, 8000),
    ),
    Assumption(
        "fleet.model.compaction.loss_probability",
        GROUPS[5],
        "the chance a compaction's summary dropped something the answer needed: whether a compacted task's work "
        "counts partial (1) or can count whole (lower)",
        "1, a conservative judgement: an answer written from a summary cannot be checked against the results it "
        "replaced, so every compacted answer counts partial, never a full success; lower values credit summaries "
        "that kept what mattered (then the orchestrator's partial claim is a false alarm on those).",
        (0.1, 0.5, 1.0),
    ),
    Assumption(
        "fleet.model.compaction.claim",
        GROUPS[5],
        "what the orchestrator reports for a task that finished on a compacted context: partial, or success",
        "partial: the orchestrator compacted and knows its answer rests on a summary; success is an agent that "
        "reports the compacted answer as done, which turns each lost summary into a silent failure.",
        ("partial", "success"),
    ),
    Assumption(
        "fleet.model.repair_valid_probability",
        GROUPS[5],
        "the chance a repair turn (the model shown its rejected call and the error) emits a valid call after "
        "malformed output of its own: what the repair-turn action buys over a fresh turn",
        "0.9, a judgement: agent frameworks re-ask once or twice on a validation error by default (instructor's "
        "max_retries, LangChain's output-fixing parser), which suits a model that usually fixes its call when shown "
        "the error; no published share is relied on, so the range runs from a coin toss to almost always.",
        (0.5, 0.9, 0.99),
    ),
    Assumption(
        "fleet.model.reprompt_valid_probability",
        GROUPS[5],
        "the chance a re-prompt with the tool's schema emits a valid call after malformed output of the model's own",
        "0.97, a judgement: with the schema sent again the model checks its call against it, so it does better "
        "than a bare repair turn, never surely (a schema read by a model is not a grammar that enforces it).",
        (0.7, 0.97, 0.999),
    ),
    Assumption(
        "fleet.model.schema_tokens",
        GROUPS[5],
        "the context a re-prompt with the tool's schema adds (it stays in the context for every later turn)",
        "800 tokens: one tool's JSON schema with its descriptions runs from about a hundred tokens (two string "
        "arguments) to a few thousand (nested objects, enums, examples), plus the instructions repeated.",
        (200, 800, 4000),
    ),
    Assumption(
        "fleet.model.fallback.denial_factor",
        GROUPS[5],
        "how often the fallback model refuses or filters a request, as a multiple of the primary's chance (drawn "
        "independently of the primary's: whether the fallback answers what the primary denied)",
        "1, the neutral value: a second model of the same class is as cautious but not on the same requests; "
        "providers' policies differ, so the range runs from a permissive model to one four times as strict. "
        "It applies where a scenario declares a fallback model.",
        (0.25, 1.0, 4.0),
    ),
    Assumption(
        "fleet.model.fallback.usd_per_1k_tokens",
        GROUPS[4],
        "the fallback model's output price (none: the primary's), what falling back costs",
        "The primary's price by default (a model of the same class); the range spans a small model to a frontier "
        "one, as for the primary. It applies where a scenario declares a fallback model.",
        (None, 0.0006, 0.01, 0.06),
    ),
    Assumption(
        "fleet.usd_per_tool_call",
        GROUPS[4],
        "the price of one tool call, failed or not",
        "$0.0005: a metered API call (a search, a CRM write); free internal tools to a pricier API.",
        (0.0, 0.0005, 0.005),
    ),
)


def field_of(assumption: Assumption) -> FieldAt | None:
    """The scenario model field the assumption's path names (None: the path names no field)."""
    from fleetchaos.scenario.load import Scenario

    return resolve(Scenario, assumption.location())


def model_default(assumption: Assumption) -> Any:
    """The assumption's default in the scenario models (a list element's: its model's field default)."""
    from fleetchaos.sim.config import WorldSpec

    if "[" not in assumption.path:
        value: Any = WorldSpec()
        for name in assumption.path.split("."):
            value = getattr(value, name)
            if value is None:  # a block the defaults leave out (the fallback model): its model's field default
                break
        else:
            return _plain(value)
    where = field_of(assumption)
    assert where is not None and where.field is not None, assumption.path  # a test checks every path resolves
    return _plain(where.field.get_default(call_default_factory=True))


def headline_value(assumption: Assumption) -> Any:
    """The value ``scenarios/default.yaml`` runs with (its first provider's, its first rule's): the headline's."""
    from fleetchaos.scenario.load import load_scenario

    found = list(concrete(load_scenario("default"), (assumption,)))
    return found[0][2] if found else model_default(assumption)


def concrete(
    scenario: Scenario, assumptions: tuple[Assumption, ...] = ASSUMPTIONS
) -> Iterator[tuple[Assumption, str, Any]]:
    """Each assumption as the ``--param`` paths of ``scenario``: (assumption, path, the scenario's value).

    ``[]`` becomes each element's index, ``[kind]`` the index of each fault rule of that
    kind; an assumption whose list the scenario leaves empty has no path there (a
    ``wrong_envelope`` rate needs a ``wrong_envelope`` rule to vary).
    """
    document = settings_document(scenario)
    for assumption in assumptions:
        for path, value in _walk(document, assumption.path.split("."), ""):
            yield assumption, path, value


def settings_document(scenario: Scenario) -> dict[str, Any]:
    """``scenario`` as JSON with every fleet and provider setting in it, those left at a default its dump omits
    (``late_reply_s``, a provider's ``service_mixture``) included: where a study reads a setting's own value."""
    from pydantic_core import to_jsonable_python

    document = scenario.model_dump(mode="json")
    fleet = document.get("fleet")
    if isinstance(fleet, dict):
        for model, dumped in [(scenario.fleet, fleet), *zip(scenario.fleet.providers, fleet.get("providers") or ())]:
            for name in type(model).model_fields:
                dumped.setdefault(name, to_jsonable_python(getattr(model, name)))
        model_document = fleet.get("model")
        if isinstance(model_document, dict):  # the model's settings its dump omits at their defaults
            for name in type(scenario.fleet.model).model_fields:
                value = getattr(scenario.fleet.model, name)
                if value is not None:
                    model_document.setdefault(name, to_jsonable_python(value))
    return document


def _walk(node: Any, pieces: list[str], prefix: str) -> Iterator[tuple[str, Any]]:
    if not pieces:
        yield prefix, node
        return
    match = PATH_PART.match(pieces[0])
    assert match is not None, pieces[0]
    name, selector = match.group(1), match.group(2)
    here = f"{prefix}.{name}" if prefix else name
    if not isinstance(node, dict) or name not in node:
        return
    child = node[name]
    if selector is None:
        yield from _walk(child, pieces[1:], here)
        return
    for index, element in enumerate(child or ()):
        if not selector or (isinstance(element, dict) and element.get("kind") == selector):
            yield from _walk(element, pieces[1:], f"{here}[{index}]")


def _plain(value: Any) -> Any:
    """A model value as a scenario document holds it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
