"""Which HTTP requests are which scenario tool (the notes store is bound by its decorator)."""

from fleetchaos import Bindings, Route

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
)
