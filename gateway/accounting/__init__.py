"""Accounting shared by every layer: vendor usage normalized, prices and costs, and the break-even rule.

It sits below the layers (usage, provider cache, rewrite lint, protocols) and imports none of them.
"""
