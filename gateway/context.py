"""The state of one request as it travels the request path.

Stages read what earlier stages found and write what they decided; nothing else is shared
between them. `body` is the client's request as received and is never mutated; `upstream_body`
is what will be sent upstream (translated, rewritten, with provider-cache markers) and is the
only body later stages edit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.answer import Answer
    from gateway.pipeline import Stage
    from gateway.policy.models import TenantPolicy
    from gateway.protocols.base import Conversation, ProtocolAdapter, SSEFilter
    from gateway.provider_cache.breaks import PrefixCheck
    from gateway.rewrite.layout import Layout
    from gateway.signing.base import Signer
    from gateway.vendors.spec import VendorSpec


@dataclass(eq=False)
class RequestContext:
    request_id: str
    adapter: ProtocolAdapter  # the client's protocol
    headers: dict[str, str]  # lower-cased request headers
    query: dict[str, str]
    body: dict[str, Any]
    raw_body: bytes = field(default=b"", repr=False)  # `body` as it came (the exact cache's fast key)
    path_model: str | None = None
    path_stream: bool = False
    endpoint: str = ""  # e.g. "chat", "responses", "messages", "generate", "converse"
    api_version: str | None = None  # Gemini's API version from the path (v1 | v1beta)
    method: str = "POST"  # the HTTP method, sent upstream as it came (pass-through endpoints)
    native_path: str = ""  # pass-through endpoints: the vendor path asked for (cachedContents ownership)
    path_params: dict[str, str] = field(default_factory=dict)  # e.g. a native Vertex request's `location`
    started: float = field(default_factory=time.perf_counter)
    created_at: float = field(default_factory=time.time)

    # identity (authenticate + policy)
    api_key: str | None = field(default=None, repr=False)  # the caller's key: never logged, never stored
    tenant: str = ""
    policy: TenantPolicy | None = None
    user: str | None = None  # x-gateway-user; the cache scope when the policy's scope is "user"
    session: str | None = None  # x-gateway-session (routing affinity)
    template_id: str | None = None
    template_version: str | None = None
    no_cache: bool = False  # Cache-Control: no-cache → skip lookups, still store
    no_store: bool = False  # Cache-Control: no-store → neither

    # resolution (protocol adapter stage)
    model: str = ""
    stream: bool = False
    provider: str = ""  # openai | anthropic | gemini | deepseek | vllm | a configured upstream name
    vendor: VendorSpec | None = None  # the provider's declared spec (gateway/vendors)
    signer: Signer | None = field(default=None, repr=False)  # adds the upstream credential when sent
    upstream_key: str | None = field(default=None, repr=False)  # the credential chosen (BYOK: the caller's)
    upstream_adapter: ProtocolAdapter | None = None  # the protocol spoken upstream
    upstream_body: dict[str, Any] = field(default_factory=dict)
    upstream_path: str = ""  # path (and query) below the provider's base URL
    upstream_headers: dict[str, str] = field(default_factory=dict, repr=False)
    upstream_base_url: str = ""  # set by routing for pools, else the provider's base URL
    replica: str | None = None
    # A same-protocol stream relayed with a filter (drops the usage chunk the gateway asked for)
    sse_filter: SSEFilter | None = field(default=None, repr=False)
    # Where the stable prefix ends, as the rewrite stage left it (gateway/rewrite/layout.py)
    rewrite: Layout | None = None

    # outcome
    # response-hit | semantic-hit | miss | bypass. `bypass` until a layer is consulted: a request
    # refused before the caches (401, 400) consulted none.
    cache_status: str = "bypass"
    similarity: float | None = None
    answer: Answer | None = None  # set only for a complete, successful answer (live or cached)
    # Who produced `answer`: "upstream" (a live call), "response-cache", "semantic-cache", or
    # "single-flight" (another request's upstream call). Caches store only when it is "upstream",
    # so an answer is written once, by the request that paid for it.
    answered_by: str = ""
    status: int = 200
    error: str | None = None
    ttft_s: float | None = None
    latency_s: float | None = None
    # The prompt's template family (provider_cache/family.py): "" none, None not computed yet.
    prefix_family: str | None = None
    # What the prompt broke against the conversation's previous request (provider_cache/breaks.py).
    prefix: PrefixCheck | None = None
    # Fields stages add to the usage record (prompt_cache_key, cache_retention, rewrite and
    # provider-cache decisions, saved cost of a hit ...).
    record: dict[str, Any] = field(default_factory=dict)
    # Per-stage scratch space, keyed by stage name: each stage's own state, read by no other module.
    scratch: dict[str, Any] = field(default_factory=dict)
    ran: list[Stage] = field(default_factory=list, repr=False)  # stages whose before() ran
    finished: bool = False  # the request's end was handled (post-stages scheduled, log written)
    _conversation: Conversation | None = field(default=None, repr=False)

    @property
    def conversation(self) -> Conversation:
        """The client's prompt in neutral form (parsed once, on first use)."""
        if self._conversation is None:
            self._conversation = self.adapter.conversation(self.body)
        return self._conversation

    @property
    def translated(self) -> bool:
        """True when the upstream speaks another protocol than the client."""
        return self.upstream_adapter is not None and self.upstream_adapter.name != self.adapter.name

    def elapsed(self) -> float:
        return time.perf_counter() - self.started
