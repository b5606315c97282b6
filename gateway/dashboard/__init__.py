"""Static assets of the usage dashboard served at `/dashboard` (gateway/usage/api.py): one HTML
page, a script that draws its charts as inline SVG (no chart library, no CDN: the gateway runs
offline inside a VPC) and a style sheet."""
