"""Volatile-span detection: what must be found, and ordinary text that must be left alone."""

from __future__ import annotations

import pytest

from gateway.rewrite.detect import VolatileDetector, detector_for


def found(text: str, patterns: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(text[s.start:s.end], s.kind) for s in VolatileDetector(patterns).spans(text)]


@pytest.mark.parametrize(("text", "value"), [
    ("Current time: 2026-11-05T10:23:45.123Z. Be nice.", "2026-11-05T10:23:45.123Z"),
    ("now=2026-11-05 10:23:45+08:00;", "2026-11-05 10:23:45+08:00"),
    ("Date: Thu, 05 Nov 2026 10:23:45 GMT", "Thu, 05 Nov 2026 10:23:45 GMT"),
    ("Today is Thursday, November 5, 2026.", "Thursday, November 5, 2026"),
    ("Generated on 5th of November 2026.", "5th of November 2026"),
    ("as of 2026/11/05 only", "2026/11/05"),
    ("on 11/05/2026 we", "11/05/2026"),
    ("time is 10:23 PM PST.", "10:23 PM PST"),
    ("at 3pm sharp", "3pm"),
    ("epoch 1762338225 now", "1762338225"),
    ("epoch ms 1762338225123 now", "1762338225123"),
])
def test_english_dates_and_times(text: str, value: str) -> None:
    assert value in [v for v, _ in found(text)]


@pytest.mark.parametrize(("text", "value"), [
    ("现在是2026年11月5日，请回答。", "2026年11月5日"),
    ("今天是二〇二六年十一月五日。", "二〇二六年十一月五日"),
    ("今天星期四。", "星期四"),
    ("周五见", "周五"),
    ("会议在下午3点20分开始", "下午3点20分"),
    ("上午10:23出发", "上午10:23"),
    ("11月5日发布", "11月5日"),
])
def test_chinese_dates_and_times(text: str, value: str) -> None:
    assert value in [v for v, _ in found(text)]


@pytest.mark.parametrize(("text", "value", "kind"), [
    ("id 3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b end", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "uuid"),
    ("sha 4f9c2a7e1b3d5f60a8c9e2d4b6f1a3c5 end", "4f9c2a7e1b3d5f60a8c9e2d4b6f1a3c5", "hex_id"),
    ("tp 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "trace_id"),
    ("token QmFzZTY0IGlkIGV4YW1wbGUxMjM0NTY3OA== end", "QmFzZTY0IGlkIGV4YW1wbGUxMjM0NTY3OA==", "base64_id"),
    ("ulid 01HXZ5W8Q2N3V4K6M7P8R9S0TA end", "01HXZ5W8Q2N3V4K6M7P8R9S0TA", "ulid"),
    ("call req_8f3k2m1x9q now", "req_8f3k2m1x9q", "prefixed_id"),
    ("Request ID: abc-42.", "abc-42", "labelled_id"),
    ("x-request-id=9b2e4c1d", "9b2e4c1d", "labelled_id"),
    ("trace_id: zz-top", "zz-top", "labelled_id"),
])
def test_ids(text: str, value: str, kind: str) -> None:
    assert (value, kind) in found(text)


@pytest.mark.parametrize("text", [
    "Use the function get_weather_data and read src/components/Button/index.tsx.",
    "Respect user_preferences_v2 and run_function when asked.",
    "Version 1.2.3 of the API; aspect ratio 16:9.",
    "May I help you? The office opens on Monday.",
    "Refunds are allowed within 30 days of delivery.",
    "适用于所有客户的退货政策。",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert found(text) == []


def test_tenant_pattern_moves_its_group_or_its_match() -> None:
    assert found("Your order #12345 ships.", (r"order #(\d+)",)) == [("12345", "tenant_pattern")]
    assert found("ticket TCK-7 open", (r"TCK-\d+",)) == [("TCK-7", "tenant_pattern")]
    # compiled case-insensitively, as the policy validator compiles them
    assert found("ticket tck-7 open", (r"TCK-\d+",)) == [("tck-7", "tenant_pattern")]


def test_overlapping_spans_merge_into_one() -> None:
    spans = found("stamp 2026-11-05T10:23:45Z end")
    assert spans == [("2026-11-05T10:23:45Z", "datetime")]


def test_long_text_uses_the_line_cache_and_keeps_offsets() -> None:
    detector = detector_for(())
    body = "\n".join(f"Rule {chr(65 + i % 26)}: be concise and polite." for i in range(200))
    for stamp in ("2026-11-05T10:23:45Z", "2026-11-05T10:24:01Z"):
        text = f"Now: {stamp}\n{body}\nRequest id: rq-{stamp[-3:-1]}"
        spans = detector.spans(text)
        assert [text[s.start:s.end] for s in spans] == [stamp, f"rq-{stamp[-3:-1]}"]
