"""``langgraph-toolnode``: LangGraph's ToolNode error text, ``Error: {repr(e)}`` and "Please fix your mistakes."

With ``handle_tool_errors=True`` (ToolNode's default until langgraph-prebuilt 1.0.1; since
then the default catches only invalid arguments and re-raises the rest, langgraph issue
#6486) a tool that raises becomes a ``ToolMessage`` with ``status="error"`` whose content is
``TOOL_CALL_ERROR_TEMPLATE.format(error=repr(e))``: ``Error: {error}\\n Please fix your
mistakes.``.  ``repr(e)`` is the exception's class and its message in quotes
(``HTTPError('429 Client Error: ...')``), unsanitised: the secrets in the message reach the
model.  The advice is to fix one's own mistakes, whatever the failure was.
"""

from __future__ import annotations

from fleetchaos.sim.formats._base import plain_success
from fleetchaos.sim.formats._vendor import VendorText, vendor_error
from fleetchaos.sim.misread import DEFAULT_MISREAD_FACTORS
from fleetchaos.sim.observation import Observation
from fleetchaos.sim.truth import AttemptReport

#: ToolNode's template; ``{error}`` is the exception's ``repr()``.
TEMPLATE = "Error: {error}\n Please fix your mistakes."


class LangGraphToolNodeFormat(VendorText):
    """LangGraph ToolNode's error text: the exception's repr, then "Please fix your mistakes.".

    It reveals what the exception's message carries (an HTTP status from a JVM or Python
    client, an errno-like code from a Node client) and its class name.  The ToolMessage's
    ``status="error"`` is a flag a final-answer guardrail can check (``failure_flag``).
    """

    name = "langgraph-toolnode"
    partial_batch = None  # no envelope: the scenario's fleet.partial_batch decides
    misread_setting = "langgraph"
    misread_factor = DEFAULT_MISREAD_FACTORS["langgraph"]
    failure_flag = True  # the ToolMessage says status="error"

    @plain_success
    def render(self, report: AttemptReport) -> Observation:
        """The ToolMessage content for the dispatch's failure."""
        if report.completed:
            return Observation(ok=True, status="ok", worker=report.worker)
        error = vendor_error(report, self.secrets)
        text = TEMPLATE.format(error=f"{error.short_cls}({error.message!r})")
        return self.failed(report, text=text)

    def __repr__(self) -> str:
        return "LangGraphToolNodeFormat()"
