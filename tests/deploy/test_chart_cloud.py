"""The chart's cloud-platform settings: the environment names of the contract, credentials only by Secret
reference (or the chart's own Secret for trying it), the Vertex key file mounted read-only, nothing at all
under workload identity / IRSA, and the gateway's own TLS with HTTPS probes. Every render is validated
strictly against the Kubernetes schemas."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest
from deploy_support import Render, check_chart

FULL = f"{check_chart.RELEASE}-llm-cache-gateway"
CLOUD_ENV = {"GATEWAY_AZURE_OPENAI_ENDPOINT", "GATEWAY_AZURE_OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY",
             "GATEWAY_VERTEX_PROJECT", "GATEWAY_VERTEX_LOCATION", "GATEWAY_VERTEX_BASE_URL",
             "GOOGLE_APPLICATION_CREDENTIALS", "GATEWAY_BEDROCK_REGION", "GATEWAY_BEDROCK_BASE_URL",
             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"}


def valid(render: Render) -> Render:
    problems, _ = check_chart.validate(render.objects)
    assert problems == []
    return render


def secret_ref(env: dict[str, Any]) -> tuple[str, str]:
    ref = env["valueFrom"]["secretKeyRef"]
    return ref["name"], ref["key"]


def test_defaults_set_no_cloud_variable(renders: dict[str, Render]) -> None:
    for render in renders.values():
        assert not CLOUD_ENV & set(render.env)
        assert not [o for o in render.all("Secret") if o["metadata"]["name"] == f"{FULL}-cloud"]


def test_existing_secrets_by_reference(render_values: Any) -> None:
    r = valid(render_values({"cloud": {
        "azureOpenAI": {"endpoint": "https://acme.openai.azure.com", "apiVersion": "2024-10-21",
                        "apiKeySecret": {"name": "azure", "key": "key1"}},
        "vertex": {"project": "acme-prod", "location": "europe-west4",
                   "serviceAccountSecret": {"name": "gcp-sa", "key": "sa.json"}},
        "bedrock": {"region": "eu-central-1", "credentialsSecret": {"name": "aws", "sessionTokenKey": "token"},
                    "bearerTokenSecret": {"name": "", "key": "api-key"}}}}))
    env = r.env
    assert env["GATEWAY_AZURE_OPENAI_ENDPOINT"]["value"] == "https://acme.openai.azure.com"
    assert env["GATEWAY_AZURE_OPENAI_API_VERSION"]["value"] == "2024-10-21"
    assert secret_ref(env["AZURE_OPENAI_API_KEY"]) == ("azure", "key1")
    assert env["GATEWAY_VERTEX_PROJECT"]["value"] == "acme-prod"
    assert env["GATEWAY_VERTEX_LOCATION"]["value"] == "europe-west4"
    assert env["GOOGLE_APPLICATION_CREDENTIALS"]["value"] == "/etc/gateway/gcp/service-account.json"
    assert env["GATEWAY_BEDROCK_REGION"]["value"] == "eu-central-1"
    assert secret_ref(env["AWS_ACCESS_KEY_ID"]) == ("aws", "aws-access-key-id")
    assert secret_ref(env["AWS_SECRET_ACCESS_KEY"]) == ("aws", "aws-secret-access-key")
    assert secret_ref(env["AWS_SESSION_TOKEN"]) == ("aws", "token")
    assert "AWS_BEARER_TOKEN_BEDROCK" not in env
    pod = r.gateway["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "gcp-service-account")
    assert volume["secret"] == {"secretName": "gcp-sa", "defaultMode": 0o440,
                                "items": [{"key": "sa.json", "path": "service-account.json"}]}
    mount = next(m for m in r.gateway_container["volumeMounts"] if m["name"] == "gcp-service-account")
    assert mount == {"name": "gcp-service-account", "mountPath": "/etc/gateway/gcp", "readOnly": True}
    assert all("value" not in e for name, e in env.items() if name.startswith(("AWS_", "AZURE_")))


def test_the_charts_own_secret(render_values: Any) -> None:
    r = valid(render_values({"cloud": {
        "azureOpenAI": {"endpoint": "https://acme.openai.azure.com"},
        "bedrock": {"region": "us-east-1"},
        "secret": {"create": True, "azureOpenAIApiKey": "k-azure", "awsBearerTokenBedrock": "ABSK-x",
                   "vertexServiceAccountJson": '{"type": "service_account"}'}}}))
    secret = r.one("Secret", f"{FULL}-cloud")
    assert secret["stringData"] == {"azure-openai-api-key": "k-azure", "aws-bearer-token-bedrock": "ABSK-x",
                                    "vertex-service-account.json": '{"type": "service_account"}'}
    assert secret_ref(r.env["AZURE_OPENAI_API_KEY"]) == (f"{FULL}-cloud", "azure-openai-api-key")
    assert secret_ref(r.env["AWS_BEARER_TOKEN_BEDROCK"]) == (f"{FULL}-cloud", "aws-bearer-token-bedrock")
    assert "AWS_ACCESS_KEY_ID" not in r.env  # no static key given: the standard chain
    assert "GOOGLE_APPLICATION_CREDENTIALS" in r.env


def test_workload_identity_and_irsa_need_no_secret(render_values: Any) -> None:
    r = valid(render_values({
        "serviceAccount": {"annotations": {"iam.gke.io/gcp-service-account": "gw@acme.iam.gserviceaccount.com",
                                           "eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/gw"}},
        "cloud": {"vertex": {"project": "acme", "location": "us-central1"}, "bedrock": {"region": "us-west-2"}}}))
    assert {"GATEWAY_VERTEX_PROJECT", "GATEWAY_BEDROCK_REGION"} <= set(r.env)
    assert not {"GOOGLE_APPLICATION_CREDENTIALS", "AWS_ACCESS_KEY_ID", "AWS_BEARER_TOKEN_BEDROCK"} & set(r.env)
    sa = r.one("ServiceAccount")
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/gw")


def test_gateway_tls(render_values: Any) -> None:
    r = valid(render_values({"tls": {"enabled": True, "secretName": "gw-tls"}}))
    args = r.gateway_container["args"]
    assert args[args.index("--ssl-certfile") + 1] == "/etc/gateway/tls/tls.crt"
    assert args[args.index("--ssl-keyfile") + 1] == "/etc/gateway/tls/tls.key"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert r.gateway_container[probe]["httpGet"]["scheme"] == "HTTPS"
    volume = next(v for v in r.gateway["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == "gw-tls"
    plain = render_values({})
    assert "--ssl-certfile" not in plain.gateway_container["args"]
    assert "scheme" not in plain.gateway_container["livenessProbe"]["httpGet"]
    with pytest.raises(helm.HelmError, match=r"tls\.secretName"):
        render_values({"tls": {"enabled": True}})


def test_schema_refuses_unknown_cloud_fields(render_values: Any) -> None:
    with pytest.raises(helm.HelmError):
        render_values({"cloud": {"bedrock": {"regoin": "us-east-1"}}})
