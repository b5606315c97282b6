"""The rewrite stage: turn the upstream body into a stable prefix plus a dynamic suffix.

Runs after the response and semantic caches, which key on the client's own body (`ctx.body`), so a
rewrite never changes a cache key; it edits only `ctx.upstream_body`, in the upstream's native
protocol (after any translation). Per tenant policy (`prompt_rewrite`):

- volatile values (dates, times, ids, the tenant's own regexes) found in the stable part — tools,
  system/developer instructions, the first user turn's preamble — are replaced by placeholders and
  restated in a labelled context block just before the final user turn;
- tools are sorted by name and every JSON-schema object gets its keys in sorted order.

The final user turn and assistant turns are never edited. What moved (kinds and places, never the
values) goes to the usage record as `rewrite`, with the stable-prefix hash (`prefix_hash`, also the
template id when the client sent none). The layout is left in `ctx.rewrite` for the
provider-cache stage, which places its breakpoints at the end of the stable part.

Applied to the vendors whose spec has a rewrite plug-in (`gateway/vendors/`); the vLLM pool has none.
"""

from __future__ import annotations

import logging

from gateway.context import RequestContext
from gateway.pipeline import Hit, Stage
from gateway.rewrite.detect import detector_for
from gateway.rewrite.layout import RewriteOptions
from gateway.rewrite.move import Mover, contains_placeholder
from gateway.rewrite.protocols import module_for

log = logging.getLogger("gateway.rewrite")



class RewriteStage(Stage):
    name = "rewrite"

    async def before(self, ctx: RequestContext) -> Hit | None:
        policy = ctx.policy.prompt_rewrite if ctx.policy is not None else None
        plugin = ctx.vendor.rewrite if ctx.vendor is not None else None
        if policy is None or not policy.enabled or plugin is None:
            return None
        protocol = ctx.upstream_adapter.name if ctx.upstream_adapter is not None else ""
        mod = module_for(protocol)
        if mod is None or not ctx.upstream_body:
            return None
        if contains_placeholder(ctx.upstream_body):
            # Already rewritten (a gateway in front of this one), or the client uses our marker
            # syntax: another round would make the markers ambiguous.
            lay = mod.layout(ctx.upstream_body)
            lay.skipped = "the body already contains [[gw: markers"
        else:
            mover = Mover(detector_for(tuple(policy.volatile_patterns)))
            options = RewriteOptions(sort_tools=policy.sort_tools,
                                     context_role=plugin.context_role)
            ctx.upstream_body, lay = mod.rewrite(ctx.upstream_body, mover, options)
        ctx.rewrite = lay
        ctx.record["rewrite"] = lay.record()
        ctx.record["prefix_hash"] = lay.prefix_hash
        if ctx.template_id is None:
            ctx.record.setdefault("prompt_template_id", "prefix:" + lay.prefix_hash[:16])
        return None
