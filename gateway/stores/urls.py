"""Multi-host Redis URLs: `redis+cluster://` and `redis+sentinel://` (redis-py's own `from_url`
takes a single host, and neither form names several seed nodes).

    redis+cluster://[[user]:password@]host:port[,host:port...][/0]
    rediss+cluster://...                                  (TLS)
    redis+sentinel://[[user]:password@]host:port[,host:port...]/service_name[/db][?sentinel_password=...]
    rediss+sentinel://...                                 (TLS to the primary and replicas)

User and password are percent-decoded (`%40` for `@`). In a Sentinel URL they authenticate to the
primary; Sentinels that require their own password take `sentinel_password` (and
`sentinel_username`) from the query string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

CLUSTER_SCHEMES = frozenset({"redis+cluster", "rediss+cluster"})
SENTINEL_SCHEMES = frozenset({"redis+sentinel", "rediss+sentinel"})


@dataclass(frozen=True)
class MultiHostURL:
    scheme: str
    hosts: list[tuple[str, int]]
    username: str | None = None
    password: str | None = None
    path: list[str] = field(default_factory=list)  # the non-empty path segments
    query: dict[str, str] = field(default_factory=dict)

    @property
    def tls(self) -> bool:
        return self.scheme.startswith("rediss")


def scheme_of(url: str) -> str:
    return url.partition("://")[0].lower()


def parse(url: str, default_port: int) -> MultiHostURL:
    """Split a multi-host URL; ValueError with a readable message when it is malformed."""
    parts = urlsplit(url)
    if not parts.scheme or "://" not in url:
        raise ValueError(f"not a URL: {redact(url)!r}")
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    username = password = None
    if userinfo:
        user, sep, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if sep else None
    hosts = [_host(item, default_port, url) for item in hostlist.split(",") if item.strip()]
    if not hosts:
        raise ValueError(f"{redact(url)!r} names no host")
    return MultiHostURL(parts.scheme.lower(), hosts, username, password,
                        [unquote(s) for s in parts.path.split("/") if s], dict(parse_qsl(parts.query)))


def _host(item: str, default_port: int, url: str) -> tuple[str, int]:
    item = item.strip()
    if item.startswith("["):  # [IPv6]:port
        host, _, rest = item[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = item.partition(":")
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        raise ValueError(f"bad port {port_text!r} in {redact(url)!r}") from None
    if not host or not 0 < port < 65536:
        raise ValueError(f"bad host {item!r} in {redact(url)!r}")
    return host, port


def redact(url: str) -> str:
    """The URL without its password (for error messages and logs)."""
    head, sep, rest = url.partition("://")
    userinfo, at, tail = rest.rpartition("@")
    if not sep or not at:
        return url
    user = userinfo.partition(":")[0]
    return f"{head}://{user}:***@{tail}"
