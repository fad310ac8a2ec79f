"""The example suite's shared setup: clients whose transports inject the run's faults."""

from __future__ import annotations

import httpx2
import openai
import pytest
from bindings import BINDINGS
from crm_agent import backend


def clients() -> tuple[openai.AsyncOpenAI, httpx2.AsyncClient]:
    """An OpenAI SDK client and a CRM client, both on offline backends under the chaos transport."""
    llm = openai.AsyncOpenAI(
        api_key="test-key",
        base_url="https://llm.test/v1",
        http_client=httpx2.AsyncClient(transport=BINDINGS.transport(httpx2.MockTransport(backend.llm))),
    )
    crm = httpx2.AsyncClient(transport=BINDINGS.transport(httpx2.MockTransport(backend.crm)), timeout=30.0)
    return llm, crm


@pytest.fixture
def make_clients():
    """Builds fresh clients (one pair per task keeps tasks independent)."""
    return clients
