"""Which HTTP requests are which scenario tool (the notes store and the diagnostic are bound by their decorators),
and each tool's own retry, declared so the simulation retries as the team's code does."""

from crm_agent import tools

from fleetchaos import Bindings, Route
from fleetchaos.policies import transport_from_tenacity

BINDINGS = Bindings(
    routes=[
        Route("llm", "POST https://llm.test/v1/*", model=True),  # each call a turn; tokens from its usage
        Route("fetch_contacts", "GET https://crm.test/v1/contacts*"),
        Route(
            "update_contact",
            "PATCH https://crm.test/v1/contacts/*",
            item=lambda request: int(request.url.params["slot"]),
        ),
    ],
    refresh="POST https://auth.test/token",
    layers=[
        transport_from_tenacity(tools.FETCH_RETRY, tools=["fetch_contacts"]),
        transport_from_tenacity(tools.UPDATE_RETRY, tools=["update_contact"]),
        transport_from_tenacity(tools.NOTE_RETRY, tools=["post_note"]),
        transport_from_tenacity(tools.DIAGNOSE_RETRY, tools=["diagnose"]),
    ],
)
