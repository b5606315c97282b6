"""Deciding whether a cached answer served a new question: by comparison, or by a judge model.

`answers_agree` is the free check made on every verified would-be hit: the fresh upstream answer
and the cached one, compared as normalised text. Only near-identical answers count as evidence that
the hit would have been right; two different texts are *no* evidence either way (a model words the
same answer differently from call to call), so without a judge model the reworded lane learns only
from answers that came back the same and from the application's feedback.

`ChatJudge` asks a model the tenant names in its policy (`semantic_cache.judge_model`) whether the
cached answer correctly and completely answers the new question, given the fresh answer as a
reference. It runs in a background task after the response was sent, never on the request path,
and only for models served over an OpenAI-compatible upstream with the gateway's own key.
"""

from __future__ import annotations

import difflib
import logging
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from gateway.signing.base import OutgoingRequest

if TYPE_CHECKING:
    from gateway.providers import ProviderTable
    from gateway.upstream.client import UpstreamClients

log = logging.getLogger("gateway.semantic")

AGREE_RATIO = 0.9  # normalised answers at least this alike (difflib) are "the same answer"
_SPACE = re.compile(r"\s+")
_VERDICT = re.compile(r"\b(yes|no)\b", re.I)

JUDGE_PROMPT = (
    "You check a cache of answers. A user asked:\n<question>{question}</question>\n"
    "The cache holds this answer, written for a similar question (<cached_question>{cached_question}"
    "</cached_question>):\n<cached_answer>{cached}</cached_answer>\n"
    "A fresh answer to the user's question, for reference:\n<fresh_answer>{fresh}</fresh_answer>\n"
    "Does the cached answer correctly and completely answer the user's question? Reply with YES or NO only."
)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).strip().lower())


def answers_agree(fresh: str, cached: str) -> bool | None:
    """True when the two answers are the same text up to spacing and case (or nearly); None otherwise."""
    a, b = _norm(fresh), _norm(cached)
    if not a or not b:
        return None
    if a == b or difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= AGREE_RATIO:
        return True
    return None


def parse_verdict(text: str) -> bool | None:
    m = _VERDICT.search(text or "")
    return None if m is None else m.group(1).lower() == "yes"


class Judge(Protocol):
    async def judge(self, model: str, question: str, cached_question: str, cached: str,
                    fresh: str) -> bool | None: ...


class ChatJudge:
    """A judge model called over an OpenAI-compatible chat-completions upstream."""

    def __init__(self, clients: UpstreamClients, providers: ProviderTable, timeout: float = 30.0) -> None:
        self.clients = clients
        self.providers = providers
        self.timeout = timeout

    async def judge(self, model: str, question: str, cached_question: str, cached: str,
                    fresh: str) -> bool | None:
        import aiohttp

        provider = self.providers.for_model(model, "openai_chat")
        if provider is None or "openai_chat" not in provider.spec.speaks or not provider.base_url:
            log.warning("semantic cache: judge model is not served over an OpenAI-compatible upstream",
                        extra={"model": model})
            return None
        key = self.providers.upstream_key(provider)
        if key is None:
            return None
        body: dict[str, Any] = {
            "model": model, "temperature": 0, "max_tokens": 3,
            "messages": [{"role": "user", "content": JUDGE_PROMPT.format(
                question=question, cached_question=cached_question, cached=cached[:4000], fresh=fresh[:4000])}],
        }
        url = f"{provider.base_url}/chat/completions"
        payload = orjson.dumps(body)
        outgoing = OutgoingRequest("POST", url, {"content-type": "application/json"}, payload, key)
        await provider.signer.sign(outgoing)
        session = self.clients.session(provider.name)
        async with session.post(url, data=payload, headers=outgoing.headers,
                                proxy=self.clients.proxy_for(url),
                                timeout=aiohttp.ClientTimeout(total=self.timeout)) as resp:
            if resp.status != 200:
                return None
            data = await resp.json(content_type=None)
        try:
            return parse_verdict(str(data["choices"][0]["message"]["content"]))
        except (KeyError, IndexError, TypeError):
            return None
