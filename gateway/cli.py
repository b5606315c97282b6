"""`llm-cache-gateway` (also `python -m gateway`): serve, demo, policy validate, emulator, lint,
report, semantic calibrate and bench. Each subcommand imports what it needs only when it runs, so `--help`
is instant."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

BENCHMARKS = {
    "all": "gateway_dev.bench.all",
    "core": "gateway_dev.bench.core",
    "response-cache": "gateway_dev.bench.response_cache",
    "semantic": "gateway_dev.bench.semantic",
    "semantic-lookup": "gateway_dev.bench.semantic_lookup",
    "semantic-live": "gateway_dev.bench.semantic_live",
    "cost": "gateway_dev.bench.cost",
    "prefix": "gateway_dev.bench.prefix",
    "routing": "gateway_dev.bench.routing",
    "usage": "gateway_dev.bench.usage",
    "emulator": "gateway_dev.bench.emulator",
    "protocols": "gateway_dev.bench.protocols",
    "litellm": "gateway_dev.bench.litellm_side_by_side",
    "startup": "gateway_dev.bench.startup",
    "load": "gateway_dev.bench.load",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llm-cache-gateway", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1, or GATEWAY_HOST)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8080, or GATEWAY_PORT)")
    serve.add_argument("--policies", default=None, help="policy folder (default ./policies, or GATEWAY_POLICIES)")
    serve.add_argument("--config", default=None, help="YAML config file (same names as the settings)")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--with-emulators", action="store_true",
                       help="development: start the bundled vendor emulators too, point the gateway at them and "
                            "print the URLs, keys and SDK snippets")
    serve.add_argument("--ssl-certfile", default=None,
                       help="serve HTTPS with this PEM certificate chain (or GATEWAY_SSL_CERTFILE)")
    serve.add_argument("--ssl-keyfile", default=None, help="its private key (or GATEWAY_SSL_KEYFILE)")

    demo = sub.add_parser("demo", help="run emulators + gateway and replay a realistic workload")
    demo.add_argument("--requests", type=int, default=0, help="scale the workload (0: the default size)")
    demo.add_argument("--redis-url", default=None, help="use this Redis instead of the embedded store")

    policy = sub.add_parser("policy", help="policy tools")
    policy_sub = policy.add_subparsers(dest="policy_command", required=True)
    validate = policy_sub.add_parser("validate", help="validate policy YAML (exit 1 with file, line, field)")
    validate.add_argument("path")

    # Listed for --help only: its options live with the emulators (`gateway_dev`), which `serve` must
    # not load, and `main` hands them over unparsed.
    sub.add_parser("emulator", help="run the vendor emulators as a server (emulator --help: its options)")

    lint = sub.add_parser("lint", help="find cache-breaking patterns in a request body")
    lint.add_argument("request", help="a JSON request body (OpenAI, Anthropic or Gemini shape); '-' reads stdin")
    lint.add_argument("--protocol", default=None, help="openai_chat | openai_responses | anthropic_messages | gemini")

    report = sub.add_parser("report", help="usage report per tenant and template")
    report.add_argument("--tenant", default=None)
    report.add_argument("--since", default="7d")
    report.add_argument("--config", default=None)
    report.add_argument("--url", default=None,
                        help="the running gateway to ask (default http://GATEWAY_HOST:GATEWAY_PORT, 127.0.0.1:8080)")

    semantic = sub.add_parser("semantic", help="semantic-cache tools (semantic calibrate --help)")
    semantic.add_argument("semantic_command", choices=["calibrate"])
    semantic.add_argument("args", nargs=argparse.REMAINDER, help="arguments of that tool")

    bench = sub.add_parser("bench", help="benchmarks (print ratios against a same-run baseline)")
    bench.add_argument("name", choices=sorted(BENCHMARKS))
    bench.add_argument("args", nargs=argparse.REMAINDER, help="arguments of that benchmark")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:
        from gateway_dev.emulators.server import main as emulator_main

        return emulator_main(argv[1:], prog="llm-cache-gateway emulator")
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "demo":
        from gateway_dev.demo import run_demo

        return run_demo(requests=args.requests, redis_url=args.redis_url)
    if args.command == "policy":
        from gateway.policy.cli import validate_command

        return validate_command(args.path)
    if args.command == "lint":
        from gateway.tools.lint import lint_command

        return lint_command(args.request, args.protocol)
    if args.command == "report":
        from gateway.config import Settings
        from gateway.usage.report import report_command

        return report_command(Settings.load(args.config), args.tenant, args.since, url=args.url)
    if args.command == "semantic":
        from gateway.semantic.calibrate import main as calibrate_main

        return calibrate_main(args.args)
    if args.command == "bench":
        module = importlib.import_module(BENCHMARKS[args.name])
        return int(module.main(args.args) or 0)
    return 2


# uvloop and httptools: the fastest loop and HTTP parser uvicorn has (httptools with a bounded TLS close at
# shutdown: idle keep-alive clients over HTTPS held a SIGTERM for the whole grace period). No access log
# (the gateway writes its own JSON line per request), no proxy-header rewriting (nothing reads the client
# address) and no Server header: less work on every request.
UVICORN: dict[str, Any] = {"loop": "uvloop", "http": "gateway.tls_shutdown:TlsClosingHttpToolsProtocol",
           "log_config": None, "access_log": False, "proxy_headers": False, "server_header": False,
           "timeout_graceful_shutdown": 30}


def tls_options(args: argparse.Namespace) -> dict[str, Any]:
    """uvicorn's TLS options from the flags or the environment; both files or neither. HTTPS matters for
    clients that send their key only over TLS (boto3 with a Bedrock API key)."""
    cert = args.ssl_certfile or os.environ.get("GATEWAY_SSL_CERTFILE") or None
    key = args.ssl_keyfile or os.environ.get("GATEWAY_SSL_KEYFILE") or None
    if bool(cert) != bool(key):
        raise SystemExit("serve: --ssl-certfile and --ssl-keyfile go together (a certificate needs its key)")
    for path in (cert, key):
        if path and not os.path.isfile(path):
            raise SystemExit(f"serve: TLS file not found: {path}")
    return {"ssl_certfile": cert, "ssl_keyfile": key} if cert and key else {}


def _serve(args: argparse.Namespace) -> int:
    if args.with_emulators:
        if args.workers > 1:
            print("serve --with-emulators runs one worker", file=sys.stderr)
            return 2
        from gateway_dev.devserve import run_dev

        return run_dev(args.host, args.port, args.policies, args.config, args.log_level)
    import uvicorn

    from gateway import logs
    from gateway.config import Settings
    from gateway.policy.issues import PolicyError

    logs.configure(args.log_level)
    settings = Settings.load(args.config, host=args.host, port=args.port, policies=args.policies)
    tls = tls_options(args)
    if args.workers > 1:
        from gateway.policy.loader import load_policies
        from gateway.workers import workers_refusal

        try:
            policies = load_policies(settings.policies)
        except PolicyError as exc:
            print(f"policies: {exc}", file=sys.stderr)
            return 1
        refusal = workers_refusal(settings, args.workers, policies)
        if refusal:
            print(refusal, file=sys.stderr)
            return 2
        # Workers import the app factory themselves; settings (and the log level: their lines are
        # JSON too) travel through the environment.
        os.environ.setdefault("GATEWAY_POLICIES", str(settings.policies))
        os.environ["GATEWAY_LOG_LEVEL"] = args.log_level
        if args.config:
            os.environ["GATEWAY_CONFIG"] = args.config
        uvicorn.run("gateway.app:app_from_env", factory=True, host=settings.host, port=settings.port,
                    workers=args.workers, **UVICORN, **tls)
        return 0
    from gateway.app import create_app

    try:
        app = create_app(settings)
    except PolicyError as exc:
        print(f"policies: {exc}", file=sys.stderr)
        return 1
    uvicorn.run(app, host=settings.host, port=settings.port, **UVICORN, **tls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
