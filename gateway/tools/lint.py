"""Cache lint: the patterns that break vendor prompt caches, with what each costs.

`llm-cache-gateway lint REQUEST.json [--protocol P]` reads one request body (OpenAI Chat or
Responses, Anthropic Messages or Gemini; the shape tells which when `--protocol` is absent) and
reports:

- volatile values in the stable prefix (dates, times, ids, as the rewrite layer finds them): every
  token after the first one can never be served from a cache;
- tools not sorted by name, or JSON-schema keys not in a canonical order: harmless only as long as
  every request builds them in exactly the same order;
- per-user data (e-mail addresses, phone numbers, user/customer fields) in the instructions or tool
  definitions: every user gets a prefix of their own.

A stable prefix under the model's minimum cacheable length is a note, not a finding: the vendor
caches nothing there whatever the prompt does, so nothing in it can break a cache (exit 0).

Each finding carries the tokens it costs and the money per 1,000 requests: tokens × (input price −
cache-read price) × 1,000, with the model's prices from litellm's cost map (list-price ratios when
the model is unknown). A finding's tokens are the part of the prefix from it to the next finding —
what is lost because of it and of no later one — so the figures differ per finding and add up to
the report's total, the prefix from the first finding on. `template_report(records)` does the same
per prompt template from usage records (see its docstring for what records can and cannot show).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gateway.provider_cache.tables import CachePrices, min_tokens, prices_for
from gateway.provider_cache.tokens import TokenCounter, default_counter
from gateway.rewrite.detect import detector_for
from gateway.rewrite.layout import RewriteOptions
from gateway.rewrite.move import Mover
from gateway.rewrite.protocols import MODULES, module_for
from gateway.vendors import registry

_PER_USER = re.compile(
    r"[\w.+-]+@[\w-]+\.[\w.]+"  # e-mail
    r"|\+?\d[\d ().-]{8,}\d"  # phone number
    r"|\b(?:user(?:name|_?id)?|customer(?:_?id)?|account(?:_?id)?|member|name|email|phone)\s*[:=]\s*\S+",
    re.IGNORECASE)


@dataclass
class Finding:
    pattern: str  # volatile_in_prefix | unstable_tool_order | per_user_before_shared
    where: str
    detail: str
    tokens_lost: int = 0
    usd_per_1000: float = 0.0
    offset: int = 0  # character offset in the rendered prefix (orders the findings)

    def as_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "where": self.where, "detail": self.detail,
                "tokens_lost": self.tokens_lost, "usd_per_1000": round(self.usd_per_1000, 6)}


@dataclass
class LintReport:
    protocol: str
    model: str
    vendor: str
    prefix_tokens: int
    min_tokens: int
    prices: CachePrices
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def tokens_lost(self) -> int:
        return sum(f.tokens_lost for f in self.findings)

    @property
    def usd_per_1000(self) -> float:
        """The whole loss: the prefix from the first finding on (the findings' figures add up to it)."""
        return sum(f.usd_per_1000 for f in self.findings)


def guess_protocol(body: Mapping[str, Any]) -> str:
    if "contents" in body or "systemInstruction" in body:
        return "gemini"
    if "input" in body or "instructions" in body:
        return "openai_responses"
    if "messages" in body and ("system" in body or ("max_tokens" in body and "model" in body
                               and str(body.get("model", "")).startswith("claude"))):
        return "anthropic_messages"
    return "openai_chat"


def vendor_of(protocol: str, model: str) -> str:
    """The built-in vendor of `model` asked in `protocol`, by the registry's own patterns (OpenAI when none)."""
    spec = registry.by_model(model, protocol)
    return spec.name if spec is not None else "openai"


def _price_book() -> Any:
    try:
        from gateway.accounting import pricing

        book = pricing.default_book()
        _ = book.cost_map  # a file read: fine in a command, never on the request path
        return book
    except Exception:
        return None


def lint_body(body: dict[str, Any], protocol: str | None = None, *, book: Any = None,
              counter: TokenCounter | None = None, tenant_patterns: tuple[str, ...] = ()) -> LintReport:
    protocol = protocol or guess_protocol(body)
    mod = module_for(protocol)
    if mod is None:
        raise ValueError(f"unknown protocol {protocol!r}; one of {', '.join(MODULES)}")
    counter = counter or default_counter()
    counter.load()
    prefix_fields, default_model = registry.lint_hints(protocol)
    model = str(body.get("model") or default_model).removeprefix("models/")
    vendor = vendor_of(protocol, model)
    prices = prices_for(vendor, vendor, model, book)
    layout = mod.layout(body)
    turns = body.get(layout.turns_key)
    turns = [turns] if isinstance(turns, str) else (turns if isinstance(turns, list) else [])
    parts = [(k, body[k]) for k in prefix_fields if body.get(k) is not None]
    parts.append((layout.turns_key, turns[:layout.stable_end]))
    text = "".join(orjson.dumps(v).decode() for _, v in parts)
    total = counter.count(text)
    report = LintReport(protocol, model, vendor, total, min_tokens(vendor, model), prices)
    gain = max(0.0, prices.input - prices.read) * 1000
    if total < report.min_tokens:
        report.notes.append(f"the stable prefix (~{total} tokens) is under {model}'s minimum cacheable length of "
                            f"{report.min_tokens}: the vendor caches none of it, so nothing here breaks a cache")
        return report

    _, lay = mod.rewrite(body, Mover(detector_for(tenant_patterns)), RewriteOptions())
    found: list[Finding] = []
    for m in lay.moved:
        offset = text.find(orjson.dumps(m.value).decode()[1:-1])
        if offset >= 0:
            found.append(Finding("volatile_in_prefix", m.where, f"{m.kind} value {m.value!r}", offset=offset))
    if lay.tools_sorted:
        offset = text.find('"tools"') if protocol != "openai_chat" else 0
        found.append(Finding("unstable_tool_order", "tools", "tools are not sorted by name; any change in their "
                             "order misses every token after them", offset=max(0, offset)))
    shared = [(k, v) for k, v in parts if k != layout.turns_key] + _system_turns(protocol, turns[:layout.stable_end])
    detector = detector_for(tenant_patterns)
    for key, value in shared:
        dumped = orjson.dumps(value).decode()
        base = text.find(dumped)
        for m in _PER_USER.finditer(dumped):
            if detector.spans(m.group(0)):
                continue  # a date or an id, reported above
            found.append(Finding("per_user_before_shared", key, f"per-user data {m.group(0)[:40]!r} in "
                                 f"{key}: every user gets a prefix of their own", offset=max(0, base) + m.start()))
    _attribute(report, found, text, counter, gain)
    return report


def _system_turns(protocol: str, turns: list[Any]) -> list[tuple[str, Any]]:
    """System/developer turns (OpenAI's instructions live in the conversation list)."""
    out: list[tuple[str, Any]] = []
    if protocol in ("openai_chat", "openai_responses"):
        for t in turns:
            if not isinstance(t, dict) or t.get("role") not in ("system", "developer"):
                break
            out.append((str(t.get("role")), t.get("content")))
    return out


def _attribute(report: LintReport, found: list[Finding], text: str, counter: TokenCounter, gain: float) -> None:
    """Each finding's tokens: from it to the next finding (the last: to the end of the prefix); none
    before the model's minimum counts as cacheable, so what precedes an early finding is lost too."""
    found.sort(key=lambda f: f.offset)
    total = report.prefix_tokens
    cuts = [counter.count(text[:f.offset]) for f in found]
    if cuts and cuts[0] < report.min_tokens:
        cuts[0] = 0  # the prefix before the first finding is too short to be cached by itself
    for i, f in enumerate(found):
        end = cuts[i + 1] if i + 1 < len(found) else total
        f.tokens_lost = max(0, end - cuts[i])
        f.usd_per_1000 = f.tokens_lost * gain
        report.findings.append(f)


def render(report: LintReport, name: str) -> str:
    lines = [f"{name}: {report.protocol}, model {report.model} ({report.vendor}; caches from "
             f"{report.min_tokens} tokens; prices {report.prices.source})",
             f"stable prefix: ~{report.prefix_tokens} tokens"]
    for note in report.notes:
        lines.append(f"note: {note}")
    if not report.findings:
        lines.append("no cache-breaking pattern found")
    for f in report.findings:
        lines.append(f"  - {f.pattern} at {f.where}: {f.detail}; ~{f.tokens_lost} tokens uncacheable because of "
                     f"it, ${f.usd_per_1000:.4f} lost per 1,000 requests")
    if report.findings:
        lines.append(f"estimated loss: ~{report.tokens_lost} tokens, ${report.usd_per_1000:.4f} per 1,000 requests "
                     "(the rewrite layer, `prompt_rewrite: {enabled: true}`, fixes volatile values and tool order)")
    return "\n".join(lines)


def lint_command(path: str, protocol: str | None = None) -> int:
    """`llm-cache-gateway lint REQUEST.json` (`-`: standard input): 0 clean (notes only), 1 findings,
    2 unreadable input."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        body = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError) as exc:
        print(f"lint: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(body, dict):
        print(f"lint: {path} must hold one JSON object (a request body)", file=sys.stderr)
        return 2
    try:
        report = lint_body(body, protocol, book=_price_book())
    except ValueError as exc:
        print(f"lint: {exc}", file=sys.stderr)
        return 2
    print(render(report, path))
    return 1 if report.findings else 0


# ---- per template, from usage records ------------------------------------------------------------


def template_report(records: Iterable[Mapping[str, Any]], book: Any = None) -> list[dict[str, Any]]:
    """One row per prompt template (`prompt_template_id`, else the rewrite's `prefix_hash`) from usage
    records (dicts as `/admin/usage/records` returns them). Records hold no prompt text, so the
    findings are what their fields show:

    - `volatile_in_prefix`: values the rewrite moved (kinds and places), and the share of requests;
    - `unstable_tool_order`: requests whose tools arrived out of order (the rewrite re-sorted them);
    - `per_user_before_shared`: one template id with many distinct stable prefixes;
    - `prefix_under_minimum`: provider-cache decisions `skip_min`;
    - `uncached_prefix`: prefix tokens the vendor did not serve from its cache.
    Money: tokens lost × (input − cache-read price) per 1,000 requests, at the template's model prices.
    """
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for rec in records:
        if rec.get("kind", "request") != "request" or rec.get("saved_layer") in ("response", "semantic",
                                                                                  "single-flight"):
            continue
        details = rec.get("details") or {}
        template = rec.get("prompt_template_id") or details.get("prefix_hash")
        if template:
            groups[str(template)].append(rec)
    return [_template_row(t, recs, book) for t, recs in sorted(groups.items(), key=lambda kv: -len(kv[1]))]


def _template_row(template: str, recs: list[Mapping[str, Any]], book: Any) -> dict[str, Any]:
    n = len(recs)
    model = max({str(r.get("model") or "") for r in recs}, key=lambda m: sum(r.get("model") == m for r in recs))
    provider = str(recs[0].get("provider") or vendor_of("", model))
    prices = prices_for(provider, vendor_of("", model), model, book)
    gain = max(0.0, prices.input - prices.read) * 1000
    inputs = sum(int(r.get("input_tokens") or 0) for r in recs)
    cached = sum(int(r.get("cached_input_tokens") or 0) for r in recs)
    findings: list[dict[str, Any]] = []
    moved: dict[tuple[str, str], int] = defaultdict(int)
    resorted = skip_min = 0
    prefixes: set[str] = set()
    prefix_tokens: list[int] = []
    for r in recs:
        details = r.get("details") or {}
        rw = details.get("rewrite") or {}
        for m in rw.get("moved") or []:
            moved[(str(m.get("kind")), str(m.get("where")))] += 1
        resorted += bool(rw.get("tools_sorted"))
        if details.get("prefix_hash"):
            prefixes.add(str(details["prefix_hash"]))
        pc = details.get("provider_cache") or {}
        skip_min += pc.get("decision") == "skip_min"
        if pc.get("prefix_tokens"):
            prefix_tokens.append(int(pc["prefix_tokens"]))
    mean_prefix = sum(prefix_tokens) / len(prefix_tokens) if prefix_tokens else 0.0
    if moved:
        kinds = ", ".join(f"{k} at {w} ({c}/{n})" for (k, w), c in sorted(moved.items()))
        findings.append({"pattern": "volatile_in_prefix", "detail": f"moved by the rewrite: {kinds}",
                         "usd_per_1000": mean_prefix * gain})
    if resorted:
        findings.append({"pattern": "unstable_tool_order", "detail": f"{resorted}/{n} requests had unsorted tools",
                         "usd_per_1000": mean_prefix * gain * resorted / n})
    if len(prefixes) > max(3, n // 10):
        findings.append({"pattern": "per_user_before_shared",
                         "detail": f"{len(prefixes)} distinct stable prefixes in {n} requests",
                         # with one shared prefix, n − 1 requests would read it; with d, only n − d do
                         "usd_per_1000": mean_prefix * gain * (len(prefixes) - 1) / n})
    if skip_min:
        findings.append({"pattern": "prefix_under_minimum", "detail": f"{skip_min}/{n} requests under the minimum",
                         "usd_per_1000": mean_prefix * gain * skip_min / n})
    uncached = max(0.0, mean_prefix - cached / n) if prefix_tokens else 0.0
    if uncached > 0:
        findings.append({"pattern": "uncached_prefix", "detail": f"~{uncached:.0f} prefix tokens per request not read "
                         "from the vendor cache", "usd_per_1000": uncached * gain})
    return {"template": template, "requests": n, "model": model, "input_tokens": inputs, "cached_input_tokens": cached,
            "cached_share": cached / inputs if inputs else 0.0,
            "cost_usd": sum(float(r.get("cost_usd") or 0.0) for r in recs), "findings": findings}


def format_template_report(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no template has requests in this window"
    out = []
    for row in rows:
        out.append(f"{row['template']}: {row['requests']} requests, {row['model']}, cached "
                   f"{row['cached_share']:.1%} of {row['input_tokens']} input tokens, ${row['cost_usd']:.4f}")
        for f in row["findings"]:
            out.append(f"  - {f['pattern']}: {f['detail']} — ${f['usd_per_1000']:.4f} per 1,000 requests")
    return "\n".join(out)
