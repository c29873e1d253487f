"""Credentials never reach a log, a trace, a report or the ledger: scrub by name and by value."""

from __future__ import annotations

import json

import pytest

from pytest_critic22.execution.runner import scrubbed_tail
from pytest_critic22.model.scrub import MASK, is_secret_name, scrub, secret_values

ENV = {
    "OPENAI_API_KEY": "sk-proj-planted0123456789abcdef",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DATABASE_URL": "postgres://user:s3cretpass@db.example:5432/x",
    "MY_SERVICE_TOKEN": 'quote"and\\backslash-ü',
    "HOME": "/home/someone",
    "LANG": "C.UTF-8",
}


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgres://user:s3cretpass@db/x", "s3cretpass"),
        ("redis://:hunter2hunter2@cache:6379/0", "hunter2hunter2"),
        ("https://x-access-token:ghs_abc123DEF456ghi789JKL@github.com/o/r.git", "ghs_abc123"),
        ("remote: https://ghp_0123456789abcdefghijABCDEFGHIJ0123@github.com/o/r", "ghp_0123"),
        ("mysql+pymysql://app:p%40ss%3Aword@localhost/db", "p%40ss%3Aword"),
        ('{"url": "amqp://guest:guestpassword@rabbit//"}', "guestpassword"),
        ("sentry https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/1", "0123456789ab"),
    ],
)
def test_credentials_in_urls_are_masked_and_the_rest_of_the_url_kept(
    text: str, secret: str
) -> None:
    out = scrub(text)
    assert secret not in out
    assert MASK in out
    assert "://" in out and "@" in out  # scheme and host stay readable


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("authorization: token 0123456789abcdef", "0123456789abcdef"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("x-api-key: plantedkey123", "plantedkey123"),
        ('{"headers": {"Authorization": "Bearer plantedbearer1"}}', "plantedbearer1"),
        ("{'Authorization': 'Bearer plantedbearer2'}", "plantedbearer2"),
        (json.dumps({"request": json.dumps({"api-key": "plantedjson3"})}), "plantedjson3"),
        ("curl -H 'PRIVATE-TOKEN: glpat-plantedplantedplanted'", "plantedplantedplanted"),
        ("sent Bearer eyJhbGciOiJIUzI1NiJ9 upstream", "eyJhbGciOiJIUzI1NiJ9"),
    ],
)
def test_authorization_headers_are_masked(text: str, secret: str) -> None:
    out = scrub(text)
    assert secret not in out, out
    assert MASK in out


@pytest.mark.parametrize(
    "token",
    [
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "glpat-AbCdEfGhIjKlMnOpQrSt",
        "xoxb-123456789012-abcdefghijkl",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAIOSFODNN7EXAMPLE",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "sk_live_AbCdEfGhIjKlMnOpQr",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    ],
)
def test_token_shapes_are_masked_wherever_they_appear(token: str) -> None:
    for text in (token, f"key={token}", f"'{token}'", json.dumps({"k": token}), f"(x {token})"):
        assert token not in scrub(text), text


def test_values_of_secret_variables_are_masked_in_every_form_text_carries_them() -> None:
    weird = ENV["MY_SERVICE_TOKEN"]
    environ_bytes = b"\0".join(f"{k}={v}".encode() for k, v in ENV.items())
    texts = [
        f"the key is {ENV['OPENAI_API_KEY']}!",
        f"aws {ENV['AWS_SECRET_ACCESS_KEY']}",
        weird,
        json.dumps({"v": weird}),
        json.dumps({"v": weird}, ensure_ascii=False),
        json.dumps({"outer": json.dumps({"v": weird})}),
        repr(weird),
        repr(environ_bytes),  # print(open('/proc/PID/environ', 'rb').read())
        environ_bytes.decode(),
        "pass=s3cretpass alone, outside its URL",
    ]
    for text in texts:
        out = scrub(text, ENV)
        for value in (ENV["OPENAI_API_KEY"], ENV["AWS_SECRET_ACCESS_KEY"], "s3cretpass"):
            assert value not in out, (text, out)
        assert "and\\backslash" not in out and "backslash-ü" not in out, (text, out)
        assert "backslash-\\xc3\\xbc" not in out and "backslash-\\u00fc" not in out, (text, out)


def test_secret_values_come_from_names_and_from_urls_whatever_their_name() -> None:
    found = secret_values(ENV)
    assert ENV["OPENAI_API_KEY"] in found and ENV["AWS_SECRET_ACCESS_KEY"] in found
    assert "s3cretpass" in found
    assert "/home/someone" not in found and "C.UTF-8" not in found
    assert found == sorted(found, key=lambda v: (-len(v), v))  # longest first


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "http://localhost:8000/path?q=1 and https://example.com/a@b is fine; "
        "Authorization required; median([1, 2]) == 1.5; bearer of bad news; /home/someone"
    )
    assert scrub(text, ENV) == text
    assert scrub("", ENV) == ""


def test_scrubbing_is_idempotent() -> None:
    text = f"{ENV['DATABASE_URL']} Authorization: Bearer abcdefghijklmnop {ENV['OPENAI_API_KEY']}"
    once = scrub(text, ENV)
    assert scrub(once, ENV) == once


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("PGPASSWORD", True),
        ("SENTRY_DSN", True),
        ("MYSQL_PWD", True),
        ("AWS_SESSION_TOKEN", True),
        ("GIT_AUTHOR_NAME", False),
        ("PATH", False),
        ("TZ", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_secret_straddling_the_cut_of_an_output_tail_is_masked_whole() -> None:
    secret = ENV["OPENAI_API_KEY"]
    for cut in range(1, len(secret)):
        # The tail keeps the last 100 characters; the secret starts `cut` characters
        # before that window, so a cut-then-scrub would leak its end.
        out = ("x" * 500 + secret + "y" * (100 - (len(secret) - cut))).encode()
        tail = scrubbed_tail(out, ENV, limit=100)
        assert secret[cut:] not in tail, (cut, tail)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=***"),
        ("export DB_PASSWORD='hunter 2'; next", "export DB_PASSWORD='***'; next"),
        ('CLIENT_SECRET="s3 cr3t" x', 'CLIENT_SECRET="***" x'),
        ("run --api-key=abc123 --x", "run --api-key=*** --x"),
        ("db.password=hunter2", "db.password=***"),
        ("GET /cb?state=1&access_token=abc.def&x=1", "GET /cb?state=1&access_token=***&x=1"),
        ("pgpassword=x1 MYSQL_PWD=x2", "pgpassword=*** MYSQL_PWD=***"),
        ("POSTGRES_PASSWORD: example", "POSTGRES_PASSWORD: ***"),
        ('password: "hunter2"', 'password: "***"'),
        ('{"client_secret": "s3cr3t", "n": 1}', '{"client_secret": "***", "n": 1}'),
        ("{'password': 'hunter2', 'user': 'u'}", "{'password': '***', 'user': 'u'}"),
        (
            json.dumps({"out": json.dumps({"Stripe_Key": "planted"})}),
            json.dumps({"out": json.dumps({"Stripe_Key": "***"})}),
        ),
        (
            json.dumps({"output": "env\nDB_PASSWORD=hunter2\nok"}),
            json.dumps({"output": "env\nDB_PASSWORD=***\nok"}),
        ),
    ],
)
def test_values_assigned_to_secret_named_keys_are_masked(text: str, masked: str) -> None:
    assert scrub(text) == masked
    assert scrub(masked) == masked  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "sorted(values, key=abs); monkey=1; session=s; author=me",
        "def login(password=None, token=token, api_key=os.environ['API_KEY']): ...",
        "password: str, token: Optional[str] = None",  # annotations, not values
        "sort_key=lambda v: v; max_tokens=100; critic22_max_tokens=N",
        'PLANTED = (b"OPENAI_API_KEY=", b"GITHUB_TOKEN=")',
        "SECRET_KEY=$SECRET_KEY PASSWORD=%s TOKEN={token} password=*** ``token=None``",
        '{"total_tokens": 1234, "password": ""}',
    ],
)
def test_code_and_placeholders_next_to_secret_names_are_left_alone(text: str) -> None:
    assert scrub(text) == text
