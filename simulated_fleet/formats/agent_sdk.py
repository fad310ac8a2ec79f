"""``agent-sdk-default``: an agent SDK's default tool-error text, the same advice whatever the failure.

When a function tool raises, the OpenAI Agents SDK hands the model the string its
``default_tool_error_function`` returns (the Python SDK's ``src/agents/tool.py``):
``An error occurred while running the tool.
Please try again. Error: {error}``, where ``{error}`` is ``str(e)``, the exception's
message.  It advises a retry whatever the cause (a revoked key, a 403 or a missing source
read the same), and it passes the message on as the tool's client wrote it: an HTTP client's
message names the URL it called (and a Python SDK's, the API key in its query), so the
planted secrets in it reach the model (``Observation.secrets`` counts them).
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import VendorText, vendor_error
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

#: The SDK's default text; ``{error}`` is the exception's ``str()``.
TEMPLATE = "An error occurred while running the tool. Please try again. Error: {error}"


class AgentSdkDefaultFormat(VendorText):
    """An agent SDK's default tool-error text: "Please try again", then the exception's message, unsanitised.

    What it reveals is what the message carries: the HTTP status in a JVM or Python client's
    message, only an errno-like code in a Node client's.  No envelope, no progress, no
    retry-after; the text is a string in the model's context, with no flag a guardrail reads.
    """

    name = "agent-sdk-default"
    partial_batch = None  # no envelope: the scenario's fleet.partial_batch decides
    misread_setting = "agent_sdk"
    misread_factor = DEFAULT_MISREAD_FACTORS["agent_sdk"]
    failure_flag = False  # the tool output is a string: nothing machine-readable says it failed

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The SDK's default text for the dispatch's failure."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        text = TEMPLATE.format(error=vendor_error(report, self.secrets).message)
        return self.failed(report, text=text)

    def __repr__(self) -> str:
        return "AgentSdkDefaultFormat()"
