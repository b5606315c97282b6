"""Usage and cost accounting: one record per request (hits included), prices from litellm's cost
map, buffered writes to the shared store, Prometheus counters, admin API, report and dashboard.

Modules: `normalize` (vendor usage → neutral counts), `pricing` (prices and cost formulas),
`record` (the usage record of a finished request), `recorder` (buffer + background flush),
`stage` (the pipeline stage), `keys` (store layout), `query` (totals and aggregates), `api` (admin
routes and the dashboard), `report` (the `report` command), `breakeven` (per-template verdict).
"""
