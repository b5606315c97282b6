"""Upstream credentials: the `Signer` seam every upstream request goes through (base.py) and, for the
cloud platforms, Vertex AI access tokens minted from a service account
(vertex_token.py) and AWS SigV4 request signing for Bedrock (sigv4.py). Both keep every blocking call (token
endpoint, credential chain) off the event loop."""
