"""The example suite's shared setup: clients whose transports inject the run's faults, traced as in production."""

from __future__ import annotations

import httpx2
import openai
import pytest
from bindings import BINDINGS
from crm_agent import backend
from crm_agent.tracing import TracingTransport


def _tool_of(request) -> str | None:
    """Which tool an HTTP request is, for its span (the auth refresh is none)."""
    if request.url.host == "llm.test":
        return "llm"
    if request.url.host == "crm.test":
        return "fetch_contacts" if request.method == "GET" else "update_contact"
    return None


def clients() -> tuple[openai.AsyncOpenAI, httpx2.AsyncClient]:
    """An OpenAI SDK client and a CRM client, both on offline backends under the chaos transport, traced."""
    llm_transport = TracingTransport(BINDINGS.transport(httpx2.MockTransport(backend.llm)), _tool_of)
    llm = openai.AsyncOpenAI(
        api_key="test-key", base_url="https://llm.test/v1", http_client=httpx2.AsyncClient(transport=llm_transport)
    )
    crm_transport = TracingTransport(BINDINGS.transport(httpx2.MockTransport(backend.crm)), _tool_of)
    crm = httpx2.AsyncClient(transport=crm_transport, timeout=30.0)
    return llm, crm


@pytest.fixture
def make_clients():
    """Builds fresh clients (one pair per task keeps tasks independent)."""
    return clients
