"""How easily an LLM orchestrator misreads a reported failure as a success, per error format.

The chance is the fleet's ``misread_probability`` times a factor per format family.
The factors are assumptions, not measurements: they decide outcomes, so a scenario can
set each one (``fleet.misread_factor.<setting>``, :class:`fleetchaos.sim.config.MisreadFactors`),
a sweep can vary it like any parameter, and every report states the values its runs used.
This table holds the built-in defaults; each format names the setting it reads
(``misread_setting``).  Standard library only.
"""

from __future__ import annotations

#: The default misread factor of each setting, and why.
DEFAULT_MISREAD_FACTORS: dict[str, float] = {
    # a bare "failed" in a stream of tool text is easy to gloss over
    "generic": 1.0,
    # a one-line status and exception class is as short and as explicit as the bare word
    "status": 1.0,
    # the failure is one line buried in trace text: the easiest format to gloss over
    "raw": 3.0,
    # an explicit error_code and category (agent-tool-error is the same envelope)
    "structured": 0.2,
    # an explicit failure_type enum, as explicit as an AgentToolError's code (the field-ablation steps too)
    "failure_type": 0.2,
    # an explicit failed/partial status field
    "subagent_result": 0.2,
    # a failure count and a blocking_failure flag are the hardest thing to misread
    "tool_envelope": 0.05,
    # The error texts real stacks show (docs/formats.md, "Real stacks' error texts"):
    # "An error occurred while running the tool. Please try again. Error: ...": one explicit
    # sentence before the exception's message, as short and explicit as a bare "failed"
    "agent_sdk": 1.0,
    # "Error: HTTPError('...')\n Please fix your mistakes.": free text that starts with the word Error
    "langgraph": 1.0,
    # MCP: free text, but flagged isError by the protocol (a host hands the flag to the model with
    # the text), so less easily glossed over than free text alone; a protocol error reaches the
    # client code, not the text
    "mcp": 0.5,
    # MCP with structuredContent: an explicit code and recovery class, as explicit as an envelope
    "mcp_structured": 0.2,
    # a JSON-RPC error member with its code
    "jsonrpc": 0.2,
    # an RFC 9457 problem: an explicit status and title
    "problem_details": 0.2,
    # a google.rpc.Status: an explicit canonical status and an ErrorInfo reason
    "google_rpc": 0.2,
}


def misread_factor(errors: object, factors: object | None = None) -> float:
    """The factor the error format ``errors`` is misread with: the scenario's value of its setting.

    ``factors`` is the scenario's :class:`~fleetchaos.sim.config.MisreadFactors` (None: the
    defaults).  A format with no setting (nothing it shows reads as a failure, or a format
    from elsewhere) uses its own ``misread_factor`` (1 when it has none).
    """
    setting = getattr(errors, "misread_setting", None)
    if setting is None:
        return float(getattr(errors, "misread_factor", 1.0))
    if factors is None:
        return DEFAULT_MISREAD_FACTORS[setting]
    return float(getattr(factors, setting))


__all__ = ["DEFAULT_MISREAD_FACTORS", "misread_factor"]
