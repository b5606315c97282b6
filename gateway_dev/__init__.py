"""Development tools around the gateway: vendor emulators, benchmarks, the demo and local-run helpers.

Nothing in the serving package (`gateway`) imports from here: `llm-cache-gateway serve` loads none of it.
The CLI reaches these modules only for the `demo`, `emulator` and `bench` commands.
"""
