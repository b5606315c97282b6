"""JSON logs, one object a line, with the request fields passed as `extra=`."""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import orjson

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}
# Attributes other libraries hang on every record: uvicorn's `color_message` (the message again, with
# terminal colour codes) and litellm's redaction marker (an object, printed as `<object at 0x…>`).
_FOREIGN = {"color_message", "taskName"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,  # several `serve --workers` processes write to one stream
            "msg": _ANSI.sub("", record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in _FOREIGN and not key.startswith(("_", "litellm")):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("LiteLLM", "litellm", "httpx", "httpx2", "urllib3", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
