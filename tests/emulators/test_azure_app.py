"""The Azure OpenAI emulator driven by the official `openai` SDK: `AzureOpenAI` on the deployment paths
(api-version, `api-key`), the plain client on `/openai/v1/`, content-filter annotations (the stream opens with the
empty-`choices` prompt annotation), OpenAI's prompt-cache rule kept per key, Azure's errors."""

from __future__ import annotations

import httpx2
import openai
import pytest

from gateway_dev.emulators import EmulatorSet

pytestmark = pytest.mark.timeout(60)
VERSION = "2024-10-21"


def _azure(emu: EmulatorSet, key: str = "azure-key-1", **kw: object) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(azure_endpoint=emu.platform_url, api_key=key, api_version=VERSION, max_retries=0,
                              **kw)  # type: ignore[arg-type]


def test_chat_on_a_deployment_path_with_api_key(emu: EmulatorSet) -> None:
    r = _azure(emu).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hello Azure"}])
    assert r.choices[0].message.content and r.choices[0].finish_reason == "stop"
    assert r.model == "gpt-4o" and r.usage is not None and r.usage.prompt_tokens > 0
    assert r.usage.prompt_tokens_details is not None and r.usage.prompt_tokens_details.cached_tokens == 0
    extra = r.model_extra or {}
    assert extra["prompt_filter_results"][0]["content_filter_results"]["hate"] == {"filtered": False,
                                                                                   "severity": "safe"}
    assert (r.choices[0].model_extra or {})["content_filter_results"]["violence"]["filtered"] is False
    (rec,) = emu.requests("azure.chat")
    assert rec.path == "/openai/deployments/gpt-4o/chat/completions" and rec.headers["api-key"] == "azure-key-1"
    assert "authorization" not in rec.headers
    assert emu.calls("azure.chat") == 1 and emu.calls("openai.chat") == 0


def test_stream_opens_with_the_prompt_annotation_and_matches_the_plain_answer(emu: EmulatorSet) -> None:
    client = _azure(emu)
    msgs = [{"role": "user", "content": "Tell me about tides"}]
    plain = client.chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=msgs, stream=True,  # type: ignore[arg-type]
                                                 stream_options={"include_usage": True}))
    first = chunks[0]
    assert first.choices == [] and first.id == "" and first.model == ""
    assert (first.model_extra or {})["prompt_filter_results"][0]["prompt_index"] == 0
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices and c.choices[0].delta)
    assert text == plain.choices[0].message.content
    annotations = [c for c in chunks if c.choices and c.choices[0].delta is None]
    assert len(annotations) == 1
    assert (annotations[0].choices[0].model_extra or {})["content_filter_offsets"]["check_offset"] == len(text)
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == plain.usage.completion_tokens  # type: ignore[union-attr]


def test_prompt_cache_is_openais_rule_per_key_and_apart_from_openai(emu: EmulatorSet, long_system: str) -> None:
    msgs = [{"role": "system", "content": long_system}, {"role": "user", "content": "Can I return shoes?"}]
    client = _azure(emu)
    first = client.chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    second = client.chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    assert first.usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]
    cached = second.usage.prompt_tokens_details.cached_tokens  # type: ignore[union-attr]
    assert cached >= 1024 and (cached - 1024) % 128 == 0 and cached <= second.usage.prompt_tokens  # type: ignore
    other = _azure(emu, key="azure-key-2").chat.completions.create(model="gpt-4o", messages=msgs)  # type: ignore
    assert other.usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]
    direct = openai.OpenAI(base_url=emu.openai_base_url, api_key="azure-key-1").chat.completions.create(
        model="gpt-4o", messages=msgs)  # type: ignore[arg-type]
    assert direct.usage.prompt_tokens_details.cached_tokens == 0  # type: ignore[union-attr]


def test_v1_path_with_the_plain_client_and_deployment_as_model(emu: EmulatorSet) -> None:
    v1 = openai.OpenAI(base_url=f"{emu.platform_url}/openai/v1/", api_key="azure-key-1", max_retries=0)
    r = v1.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert r.model == "gpt-4o-mini" and r.choices[0].message.content
    (rec,) = emu.requests("azure.chat")
    assert rec.path == "/openai/v1/chat/completions" and rec.headers["authorization"] == "Bearer azure-key-1"
    resp = v1.responses.create(model="gpt-4o", input="hello")
    assert resp.output_text and resp.usage is not None and resp.usage.input_tokens_details.cached_tokens == 0
    emb = v1.embeddings.create(model="text-embedding-3-small", input="hello")
    assert len(emb.data[0].embedding) == 1536


def test_azure_client_embeddings_and_responses_paths(emu: EmulatorSet) -> None:
    client = _azure(emu)
    emb = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    assert [d.index for d in emb.data] == [0, 1]
    resp = client.responses.create(model="gpt-4o", input="hello there")
    assert resp.output_text
    assert emu.requests("azure.embeddings")[0].path == "/openai/deployments/text-embedding-3-small/embeddings"
    assert emu.requests("azure.responses")[0].path == "/openai/responses"


def test_unknown_deployment_and_api_versions(emu: EmulatorSet) -> None:
    with pytest.raises(openai.NotFoundError) as e:
        _azure(emu).chat.completions.create(model="no-such-deployment", messages=[{"role": "user", "content": "x"}])
    assert e.value.body["code"] == "DeploymentNotFound"  # type: ignore[index]
    bad = openai.AzureOpenAI(azure_endpoint=emu.platform_url, api_key="k", api_version="2031-01-01", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="API version not supported"):
        bad.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    url = f"{emu.platform_url}/openai/deployments/gpt-4o/chat/completions"
    body = {"messages": [{"role": "user", "content": "x"}]}
    missing = httpx2.post(url, json=body, headers={"api-key": "k"})
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "Resource not found"
    ok = httpx2.post(url, params={"api-version": VERSION}, json=body, headers={"api-key": "k"})
    assert ok.status_code == 200 and ok.json()["model"] == "gpt-4o"  # REST may omit `model`: the deployment names it


def test_auth_keys_and_entra_tokens(emu: EmulatorSet) -> None:
    url = f"{emu.platform_url}/openai/deployments/gpt-4o/chat/completions?api-version={VERSION}"
    body = {"messages": [{"role": "user", "content": "x"}]}
    none = httpx2.post(url, json=body)
    assert none.status_code == 401 and none.json()["error"]["code"] == "401"
    assert "invalid subscription key" in none.json()["error"]["message"]
    emu.platforms.azure.config.api_keys = {"good-key"}
    emu.platforms.azure.config.entra_tokens = {"entra-token-1"}
    try:
        assert httpx2.post(url, json=body, headers={"api-key": "bad-key"}).status_code == 401
        assert httpx2.post(url, json=body, headers={"api-key": "good-key"}).status_code == 200
        token = openai.AzureOpenAI(azure_endpoint=emu.platform_url, azure_ad_token="entra-token-1",
                                   api_version=VERSION, max_retries=0)
        assert token.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}]).choices
        assert emu.requests("azure.chat")[-1].headers["authorization"] == "Bearer entra-token-1"
        wrong = httpx2.post(url, json=body, headers={"authorization": "Bearer forged"})
        assert wrong.status_code == 401 and "Access token is missing, invalid" in wrong.json()["error"]["message"]
    finally:
        emu.platforms.azure.config.api_keys = None
        emu.platforms.azure.config.entra_tokens = set()


def test_faults_answer_in_azure_shape(emu: EmulatorSet) -> None:
    emu.platforms.faults.azure.inject("status=429,retry_after=1")
    with pytest.raises(openai.RateLimitError) as e:
        _azure(emu).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert e.value.response.headers["retry-after"] == "1"
    assert emu.calls("azure.chat") == 1
