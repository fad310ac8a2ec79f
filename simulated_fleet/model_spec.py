"""The scenario models of the orchestrator's language model: its conversation and tokens (``fleet.model``), and how
easily it misreads each error format (``fleet.misread_factor``).

A task is a conversation: a system prompt, then one model turn per step execution, each
reading the whole context so far (its input tokens), emitting the step's tool calls (the
step's ``tokens``, as before), and growing the context by what comes back: each tool
result, and each error text the arm's format rendered.  :mod:`fleetchaos.sim.conversation`
holds the arithmetic; this module holds the settings, re-exported by
:mod:`fleetchaos.sim.config`, where users look.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_serializer, model_validator

from fleetchaos.sim.distribution import Distribution
from fleetchaos.sim.fault_specs import _Strict
from fleetchaos.sim.fleet_parts import _without_defaults
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.provider_spec import ProviderSpec

#: The defaults, and where each comes from (docs/assumptions.md, "The model's conversation").
CHARS_PER_TOKEN = 4.0
"""The tokeniser rule: one token per this many characters (the common rule of thumb for English text with
byte-pair tokenisers: about 4 characters, or three quarters of a word, per token)."""
SYSTEM_PROMPT_TOKENS = 2000
"""A system prompt with the task and the tools' schemas: a few hundred tokens of instructions and about a hundred
per tool schema."""
RESULT_TOKENS = 200
"""A tool result in the context: a short JSON object or a few lines of output (a file listing, a test summary)."""
RESULT_TOKENS_SIGMA = 0.0
"""Every tool result costs result_tokens (the conversation model as it was).  Tool outputs are heavy-tailed in practice
(a whole file, a log, a page of search results beside a one-line status): plausible 1 to 2.5, where one result in a
hundred is 10 to 330 times the typical one."""
CONTEXT_WINDOW_TOKENS = 128_000
"""The context window of the common hosted models' small and mid tiers (128k tokens; the large tiers offer 200k to 1M):
plausible 8k (a small open model) to 1M."""
#: The model's reading of errors beyond the misread chance (fleetchaos.sim.reading) is off by default: a scenario
#: written before it keeps its results byte for byte, and a study turns it on over the plausible ranges below
#: (docs/formats.md, "How the model reads an error").
GIVE_UP_PROBABILITY = 0.0
"""Plausible: 0 to 0.2 per failed observation of a bare "failed" (scaled per format like the misread chance)."""
RETRY_PERMANENT_PROBABILITY = 0.0
"""Plausible: 0 to 0.5; issue trackers report retry loops on deterministic denials (docs/formats.md)."""
NOTICE_SILENT_PROBABILITY = 0.0
"""Plausible: 0 to 0.5: silent failures are by definition what a reader rarely catches."""
ATTEMPT_FACTOR = 1.0
"""Plausible: 1 to 3: agent studies report that the chance of recovering falls with each failed attempt."""
USD_PER_1K_INPUT_TOKENS = 0.0025
"""Input tokens are listed at about a quarter of the output price by the large hosted providers
(``fleet.usd_per_1k_tokens`` is the output price)."""

#: The model-side recovery actions (fleetchaos.sim.model_turns; docs/assumptions.md, "The model's conversation").
REPAIR_VALID_PROBABILITY = 0.9
"""A judgement, plausible 0.5 to 0.99: shown the parser's or the tool router's error beside its own call, a current
model usually emits a valid call on the next turn (agent frameworks re-ask once or twice by default: instructor's
``max_retries``, LangChain's output-fixing parser); no published measurement of the share is relied on."""
REPROMPT_VALID_PROBABILITY = 0.97
"""A judgement, plausible 0.7 to 0.999: with the tool's JSON schema sent again the call is checked against it by the
model itself, so more calls come back valid than after a bare repair turn (never surely: a schema is still read by
a model, not enforced by a grammar)."""
SCHEMA_TOKENS = 800
"""Plausible 200 to 4000: one tool's JSON schema with its descriptions runs from a hundred tokens (two string
arguments) to a few thousand (nested objects, enums, examples); the re-prompt also repeats the instructions."""

#: Context compaction (fleetchaos.sim.compaction; docs/assumptions.md, "The model's conversation").
SUMMARY_TOKENS = 1000
"""A judgement, plausible 300 to 5,000: the summary is a page of notes on what the summarised turns found; the
summarisation middleware of agent libraries asks for "the most important context" without fixing a size."""
KEEP_TOKENS = 0
"""Plausible 0 to a quarter of the window: a compact command replaces the whole conversation after the system prompt
by its summary (0); summarisation middleware keeps the last few messages verbatim (6 to 20 messages by default in
two such libraries), which a scenario states as their tokens."""
LOSS_PROBABILITY = 1.0
"""A conservative judgement, plausible 0.1 to 1: an answer written from a summary cannot be checked against the
results the summary replaced, so by default every compacted answer counts as partial, never as a full success; a
lower value credits summaries that kept what the answer needed."""
COMPACTION_S = Distribution(mean_s=10, cv=0.5)
"""Writing a summary of about 1,000 tokens at 50 to 150 output tokens a second takes 7 to 20 s, reading included."""


class CompactionSpec(_Strict):
    """What a context compaction (a policy's CompactContext action) does and costs.

    The compaction is a model turn through the fleet's model provider: it reads the part of the conversation it
    summarises (at most the window), writes a summary of ``summary_tokens`` (never longer than what it summarises) and
    takes ``duration``; it can fail like any model call, and then the context stays as it was.  After it the context
    is the system prompt, the summary and the last ``keep_tokens`` of the conversation.  The results it summarised are
    lost to the task: with ``loss_probability`` the answer needed what the summary dropped, so a task whose answer
    rests on them is partial in truth; the orchestrator, which knows it compacted, claims ``claim`` for it.
    """

    summary_tokens: int = Field(
        default=SUMMARY_TOKENS,
        ge=0,
        le=10_000_000,
        description="tokens of the summary that replaces the summarised part of the conversation (never more than "
        "that part)",
    )
    keep_tokens: int = Field(
        default=KEEP_TOKENS,
        ge=0,
        le=100_000_000,
        description="the most recent tokens of the conversation kept verbatim beside the summary (0: everything after "
        "the system prompt is summarised)",
    )
    loss_probability: float = Field(
        default=LOSS_PROBABILITY,
        ge=0,
        le=1,
        description="chance a compaction's summary dropped something the task's answer needed: a task whose answer "
        "rests on it is partial in truth (1: every compacted answer counts partial)",
    )
    claim: Literal["partial", "success"] = Field(
        default="partial",
        description="what the orchestrator claims for a finished task whose answer rests on a summary: partial "
        "(it knows it compacted), or success (an agent that reports the compacted answer as done)",
    )
    duration: Distribution = Field(default=COMPACTION_S, description="time the compaction turn takes to write")


class FallbackSpec(_Strict):
    """A second model a turn can be sent to (the FallbackModel action of a policy).

    Its refusals and filter stops are its own: a denial is deterministic for one model and
    one request, so the fallback draws them from its own keyed stream, at the primary's
    probability times ``denial_factor``; its malformed output and cut streams are drawn
    from that stream too, at the primary's probabilities.  Its turns are priced at its own
    prices and served by its own ``capacity`` when one is declared (else by the primary's
    provider: the same endpoint, another model).
    """

    name: str = Field(default="fallback", min_length=1, max_length=200, description="names the model in reports")
    usd_per_1k_tokens: float | None = Field(
        default=None, ge=0, description="its output price (default: the primary's, fleet.usd_per_1k_tokens)"
    )
    usd_per_1k_input_tokens: float | None = Field(
        default=None, ge=0, description="its input price (default: the primary's, fleet.model.usd_per_1k_input_tokens)"
    )
    denial_factor: float = Field(
        default=1.0,
        ge=0,
        le=100,
        description="its chance of a refusal or a filter stop, as a multiple of the primary's (drawn independently "
        "of the primary's: 1, as cautious as the primary but not on the same requests)",
    )
    capacity: ProviderSpec | None = Field(
        default=None,
        description="the provider that serves its turns, with a declared capacity (servers, max_in_flight, ...); "
        "its tools must be left out; none: the primary's provider serves them (the fleet's API token bucket, "
        "api_rate_per_s, is the client's and paces the turns of both models)",
    )

    @model_validator(mode="after")
    def _capacity_serves_the_model(self) -> FallbackSpec:
        if self.capacity is not None and self.capacity.tools is not None:
            raise ValueError(
                "fleet.model.fallback.capacity.tools: the fallback's provider serves the fallback's turns only; "
                "leave tools out"
            )
        return self


class ModelSpec(_Strict):
    """The orchestrator's model: how its conversation grows and what its tokens cost.

    Each step execution of a step that uses the API is one model turn through the fleet's
    model provider (the provider its API calls go to, as before): it reads the context
    (input tokens, counted in ``tokens`` and priced at ``usd_per_1k_input_tokens``) and
    emits the step's calls (the step's ``tokens`` per call, priced at
    ``fleet.usd_per_1k_tokens``).  The context starts at ``system_prompt_tokens`` and grows
    by ``result_tokens`` per tool result (its median: ``result_tokens_sigma`` spreads them) and by
    each error text as the arm's format renders it, counted with the tokeniser rule
    ``chars_per_token``.  A turn whose context is past ``context_window_tokens`` is refused
    (the ``context_overflow`` kind): it emerges from the sizes and the window, never drawn.

    How the model reads each error (:mod:`fleetchaos.sim.reading`): besides misreading a
    failure as a success (``fleet.misread_probability``), it may give up early, retry a
    failure no retry can pass, or notice a silent failure; the first three grow by
    ``attempt_factor`` with each failed attempt already in its context.
    """

    chars_per_token: float = Field(
        default=CHARS_PER_TOKEN,
        gt=0,
        le=100,
        description="the tokeniser rule: a text of n characters costs ceil(n / chars_per_token) tokens of context",
    )
    system_prompt_tokens: int = Field(
        default=SYSTEM_PROMPT_TOKENS,
        ge=0,
        le=10_000_000,
        description="the context a task's conversation starts with (instructions, the task, the tools' schemas)",
    )
    result_tokens: int = Field(
        default=RESULT_TOKENS,
        ge=0,
        le=10_000_000,
        description="tokens one tool result adds to the context (a step's own result_tokens overrides it)",
    )
    give_up_probability: float = Field(
        default=GIVE_UP_PROBABILITY,
        ge=0,
        le=1,
        description="chance the model stops on a reported failure before its policy decides (claims it failed); "
        "scaled by the format's misread_factor and by attempt_factor per failed attempt already in context",
    )
    retry_permanent_probability: float = Field(
        default=RETRY_PERMANENT_PROBABILITY,
        ge=0,
        le=1,
        description="chance the model retries a failure its policy stopped on that no retry can pass (its kind is "
        "not recoverable); scaled like give_up_probability",
    )
    notice_silent_probability: float = Field(
        default=NOTICE_SILENT_PROBABILITY,
        ge=0,
        le=1,
        description="chance the model notices that a call's reported success was hollow (a masked failure) and "
        "retries the step; the same for every format",
    )
    attempt_factor: float = Field(
        default=ATTEMPT_FACTOR,
        ge=1,
        le=10,
        description="each failed attempt already in the task's context multiplies the chances above and the misread "
        "chance by this (1: the model reads its tenth failure as it read its first)",
    )
    result_tokens_sigma: float = Field(
        default=RESULT_TOKENS_SIGMA,
        ge=0,
        le=4,
        description="how heavy-tailed tool outputs are: each tool result's tokens are lognormal around result_tokens "
        "(their median) with this shape (the sigma of their log), drawn per call, so their mean is result_tokens x "
        "exp(sigma^2 / 2); 0: every result costs result_tokens",
    )
    result_tokens_repeat: Literal["same", "redrawn"] = Field(
        default="same",
        description="what a tool call made again returns: a result of the same size (same: the same page, file or "
        "log) or one drawn anew (redrawn: a search whose results change); matters only with result_tokens_sigma",
    )
    context_window_tokens: int = Field(
        default=CONTEXT_WINDOW_TOKENS,
        ge=1,
        le=100_000_000,
        description="the model's context window: a turn whose context is past it is refused (context_overflow, "
        "400 context_length_exceeded) and emits no call",
    )
    usd_per_1k_input_tokens: float = Field(
        default=USD_PER_1K_INPUT_TOKENS,
        ge=0,
        description="price of the context a turn reads (input tokens); fleet.usd_per_1k_tokens prices the rest",
    )
    repair_valid_probability: float = Field(
        default=REPAIR_VALID_PROBABILITY,
        ge=0,
        le=1,
        description="chance a repair turn (the model shown its rejected call and the error) emits a valid call after "
        "malformed output of its own (bad arguments, a length stop, an unknown tool, an empty turn)",
    )
    reprompt_valid_probability: float = Field(
        default=REPROMPT_VALID_PROBABILITY,
        ge=0,
        le=1,
        description="the same for a re-prompt that also sends the tool's schema",
    )
    schema_tokens: int = Field(
        default=SCHEMA_TOKENS,
        ge=0,
        le=1_000_000,
        description="tokens a re-prompt with the tool's schema adds to the context",
    )
    fallback: FallbackSpec | None = Field(
        default=None,
        description="a second model the fallback-model action sends a turn to; none: that action asks the same model",
    )
    compaction: CompactionSpec = Field(
        default_factory=CompactionSpec,
        description="what a context compaction (the compact-context action) keeps, writes, loses and claims",
    )

    @model_serializer(mode="wrap")
    def _omit_new_defaults(self, handler):
        # Settings added with the model-side recovery actions dump only when set: older results stay byte-identical.
        return _without_defaults(
            self,
            handler(self),
            (
                "repair_valid_probability",
                "reprompt_valid_probability",
                "schema_tokens",
                "fallback",
                "compaction",
                "result_tokens_repeat",
            ),
        )


def _factor(setting: str, why: str) -> float:
    return Field(default=DEFAULT_MISREAD_FACTORS[setting], ge=0, le=1000, description=why)


class MisreadFactors(_Strict):
    """How easily each error format's failures are misread as successes: the chance is
    ``misread_probability`` times the format's factor (at most 1).

    The defaults are judgements about how visible each format makes a failure, not
    measurements (docs/formats.md); a scenario may set its own and a sweep may vary them
    (``--param fleet.misread_factor.structured=0,0.2,1``).  ``empty-success`` and
    ``fabricated-defaults`` report nothing as failed, so they have no factor.
    """

    generic: float = _factor("generic", "the generic status word: a bare 'failed' in tool text")
    status: float = _factor("status", "an HTTP status and exception class: one short explicit line, as the bare word")
    raw: float = _factor("raw", "raw vendor text: the failure is one line in a stack trace")
    structured: float = _factor("structured", "the AgentToolError envelope (structured, agent-tool-error)")
    failure_type: float = _factor("failure_type", "the failure-type envelope and its field-ablation steps")
    subagent_result: float = _factor("subagent_result", "the subagent-result envelope: an explicit status")
    tool_envelope: float = _factor("tool_envelope", "the tool envelope: a failure count and a blocking flag")
    agent_sdk: float = _factor("agent_sdk", "an agent SDK's default tool-error text: one explicit sentence")
    langgraph: float = _factor("langgraph", "LangGraph ToolNode's error text: 'Error: ...' in free text")
    mcp: float = _factor("mcp", "an MCP tool result flagged isError, its text free text")
    mcp_structured: float = _factor("mcp_structured", "an MCP tool result with a structured error (code, recovery)")
    jsonrpc: float = _factor("jsonrpc", "a JSON-RPC 2.0 error object: an explicit error member with a code")
    problem_details: float = _factor("problem_details", "an RFC 9457 problem: an explicit status and title")
    google_rpc: float = _factor("google_rpc", "a google.rpc.Status (AIP-193): a canonical status and a reason")


__all__ = ["CompactionSpec", "FallbackSpec", "MisreadFactors", "ModelSpec"]
