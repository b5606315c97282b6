"""Model aliases: a tenant's own names for models (`fast: gpt-4o-mini`), resolved before routing.

An alias resolves once (an alias naming another alias is not followed), so a policy cannot make a
loop. The usage record keeps the name the caller sent as `model_alias`; metrics, routing, the
cache key and the upstream body use the model it stands for.
"""

from __future__ import annotations

from gateway.context import RequestContext


def resolve_alias(ctx: RequestContext, model: str) -> str:
    aliases = ctx.policy.model_aliases if ctx.policy is not None else None
    target = aliases.get(model) if aliases else None
    if target is None:
        return model
    ctx.record["model_alias"] = model
    return target
