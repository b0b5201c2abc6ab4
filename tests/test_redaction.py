"""The redactor keeps credentials and known secret values out of what is recorded."""

from __future__ import annotations

import gzip
import json

import httpx2

from primer.clock import VirtualClock
from primer.redact import MIN_SECRET_LENGTH, NOT_RECORDED, SCRUBBED, Redactor
from primer.wire import RecordingClient

SECRET = "s3cr/et+key=42"


def test_text_scrubs_the_secret_in_every_form_it_takes() -> None:
    redactor = Redactor([SECRET])
    for form in (SECRET, "s3cr%2Fet%2Bkey%3D42", "s3cr\\/et+key=42"):
        assert redactor.text(f"before {form} after") == f"before {SCRUBBED} after"
    # json.dumps escapes nothing here but a quote would be: the escaped form is scrubbed too.
    quoted = Redactor(['ab"cd'])
    assert quoted.text(json.dumps({"k": 'x ab"cd y'})) == '{"k": "x [secret] y"}'


def test_longest_secret_first_and_short_ones_ignored() -> None:
    redactor = Redactor(["abcd", "abcdefgh", "xy", None, ""])
    assert redactor.text("abcdefgh abcd xy") == f"{SCRUBBED} {SCRUBBED} xy"
    assert all(len(s) >= MIN_SECRET_LENGTH for s in redactor.secrets)


def test_with_secrets_adds_without_forgetting() -> None:
    first = Redactor(["first-secret"])
    both = first.with_secrets("second-secret", None)
    assert both.text("first-secret second-secret") == f"{SCRUBBED} {SCRUBBED}"
    assert first.text("second-secret") == "second-secret"  # the original is unchanged


def test_credential_headers_are_not_recorded_whatever_their_value() -> None:
    redactor = Redactor([SECRET])
    headers = redactor.headers(
        [
            ("Authorization", "Bearer whatever"),
            ("X-Api-Key", "k"),
            ("api-key", "k"),
            ("Cookie", "session=1"),
            ("Set-Cookie", "session=2"),
            ("X-Echo", f"said {SECRET}"),
            ("Accept", "application/json"),
        ]
    )
    assert headers == [
        ("accept", "application/json"),
        ("api-key", NOT_RECORDED),
        ("authorization", NOT_RECORDED),
        ("cookie", NOT_RECORDED),
        ("set-cookie", NOT_RECORDED),
        ("x-api-key", NOT_RECORDED),
        ("x-echo", f"said {SCRUBBED}"),
    ]


def test_json_bodies_lose_credential_fields_and_secret_values() -> None:
    redactor = Redactor([SECRET])
    echoed = {
        "headers": {"Authorization": "Bearer anything", "Cookie": "a=b", "Host": "127.0.0.1"},
        "args": {"note": f"key {SECRET}"},
        "api_key": "plain",
        "list": [SECRET, 3, None, {"password": "pw"}],
        "usage": {"prompt_tokens": 5},
    }
    assert redactor.json(echoed) == {
        "headers": {"Authorization": NOT_RECORDED, "Cookie": NOT_RECORDED, "Host": "127.0.0.1"},
        "args": {"note": f"key {SCRUBBED}"},
        "api_key": NOT_RECORDED,
        "list": [SCRUBBED, 3, None, {"password": NOT_RECORDED}],
        "usage": {"prompt_tokens": 5},
    }


def test_urls_lose_userinfo_credential_parameters_and_secret_values() -> None:
    redactor = Redactor([SECRET])
    assert redactor.url("https://user:pw@example.test/v1/x") == "https://not-recorded@example.test/v1/x"
    assert (
        redactor.url("https://example.test/get?item=milk&api_key=abc&token=def")
        == f"https://example.test/get?item=milk&api_key={NOT_RECORDED.replace(' ', '+')}&token=not+recorded"
    )
    assert redactor.url("https://example.test/get?item=milk") == "https://example.test/get?item=milk"
    assert redactor.url(f"https://example.test/{SECRET}/x") == f"https://example.test/{SCRUBBED}/x"
    assert SCRUBBED in redactor.url("https://example.test/get?q=s3cr%2Fet%2Bkey%3D42")


def test_the_wire_recorder_redacts_what_it_records_and_passes_the_bytes_on_unchanged() -> None:
    # A gzip body echoing the secret: decoded and scrubbed in the record, raw for the caller.
    body = json.dumps({"headers": {"Authorization": f"Bearer {SECRET}"}, "echo": SECRET}).encode()
    raw = gzip.compress(body)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200, headers={"content-type": "application/json", "content-encoding": "gzip"}, content=raw
        )

    client = RecordingClient(clock=VirtualClock(), redactor=Redactor([SECRET]), transport=httpx2.MockTransport(answer))
    with client:
        response = client.post(
            f"https://example.test/v1/x?key={SECRET}", json={"k": SECRET}, headers={"api-key": SECRET}
        )
        assert response.json()["echo"] == SECRET  # the caller got what was sent
    [wired] = client.recorder.take()
    exchange = wired.exchange
    assert exchange.request.url == "https://example.test/v1/x?key=not+recorded"
    assert exchange.request.json_body == {"k": SCRUBBED}
    assert ("api-key", NOT_RECORDED) in exchange.request.headers
    assert exchange.response is not None
    assert exchange.response.json_body == {"headers": {"Authorization": NOT_RECORDED}, "echo": SCRUBBED}
    assert ("content-encoding", "gzip") in exchange.response.headers
    assert SECRET not in exchange.model_dump_json()
    assert client.recorder.take() == []  # taken once
