"""A model server is hostile input: whatever it sends, `arcana run` and `arcana model check` end
with one line on stderr and exit 69 (man/exit-codes.md), never a traceback or a hang."""

from __future__ import annotations

import json

import pytest
from raw_model_server import CHUNKED_OK, LAST_CHUNK, RawModelServer, chunk


def ndjson(*objects) -> list[bytes]:
    return [chunk((json.dumps(o) + "\n").encode()) for o in objects]


def sse(*objects) -> list[bytes]:
    return [chunk(f"data: {json.dumps(o)}\n\n".encode()) for o in objects]


GOOD = {
    "ollama": [CHUNKED_OK, *ndjson({"message": {"content": "All "}, "done": False},
                                   {"message": {"content": "good, café ☕."}, "done": True}), LAST_CHUNK],
    "openai": [CHUNKED_OK, *sse({"choices": [{"delta": {"content": "All "}}]},
                                {"choices": [{"delta": {"content": "good, café ☕."}}]}), chunk(b"data: [DONE]\n\n"), LAST_CHUNK],
}

MALFORMED = {
    "ollama message is a string": ("ollama", [CHUNKED_OK, *ndjson({"message": "hi", "done": False}), LAST_CHUNK]),
    "ollama content is a number": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": 5}, "done": False}), LAST_CHUNK]),
    "openai choices is a string": ("openai", [CHUNKED_OK, *sse({"choices": "abc"}), LAST_CHUNK]),
    "openai delta is a list": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": ["x"]}]}), LAST_CHUNK]),
    "openai content is an object": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": {"content": {"a": 1}}}]}), LAST_CHUNK]),
    "dropped mid-chunk": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": "partial "}, "done": False}),
                                     b"40\r\n{\"message\""]),
    "not HTTP at all": ("ollama", [b"SSH-2.0-OpenSSH_9.6\r\n"]),
    # A stream that ends cleanly before its end marker is a cut-off answer, not a short one.
    "ollama ends without done": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": "The code is "}, "done": False}),
                                            LAST_CHUNK]),
    # "done": "false" (a string) is no end: the stream then ended before its end marker.
    "ollama done is a string": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": "The code is "}, "done": "false"}),
                                           LAST_CHUNK]),
    "openai ends without [DONE]": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": {"content": "The code is "}}]}),
                                              LAST_CHUNK]),
    # An answer that ends properly with no text (a tool call: Arcana offers no tools; an empty list of
    # choices; a filtered answer) printed nothing and exited 0, recorded as a turn and summarised.
    "openai tool call": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": {"tool_calls": [
        {"index": 0, "function": {"name": "f", "arguments": "{}"}}]}}]}, {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    "openai empty choices": ("openai", [CHUNKED_OK, *sse({"choices": []}), chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    "openai no text": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": {"content": ""}, "finish_reason": "content_filter"}]}),
                                  LAST_CHUNK]),
    "ollama tool call": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": "", "tool_calls": [
        {"function": {"name": "f", "arguments": {}}}]}, "done": True}), LAST_CHUNK]),
    "ollama no text": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": ""}, "done": True}), LAST_CHUNK]),
    # A server that stops at its token limit ends its stream properly, saying why: half an answer was
    # printed with exit 0 and recorded as the turn.
    "openai cut at its length limit": ("openai", [CHUNKED_OK, *sse({"choices": [{"delta": {"content": "The code is "}}]},
        {"choices": [{"delta": {}, "finish_reason": "length"}]}), chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    # Text that is not Unicode: invalid UTF-8 was replaced with U+FFFD, printed and recorded as the
    # turn; a lone surrogate (valid JSON) ended `arcana run` in a traceback when printed.
    "ollama invalid UTF-8": ("ollama", [CHUNKED_OK, chunk(b'{"message": {"content": "caf\xe9"}, "done": false}\n'),
                                        *ndjson({"message": {"content": "."}, "done": True}), LAST_CHUNK]),
    "openai invalid UTF-8": ("openai", [CHUNKED_OK, chunk(b'data: {"choices": [{"delta": {"content": "caf\xe9"}}]}\n\n'),
                                        chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    "ollama lone surrogate": ("ollama", [CHUNKED_OK, chunk(b'{"message": {"content": "x \\ud800"}, "done": false}\n'),
                                         *ndjson({"message": {"content": "."}, "done": True}), LAST_CHUNK]),
    "openai lone surrogate": ("openai", [CHUNKED_OK, chunk(b'data: {"choices": [{"delta": {"content": "x \\udfff"}}]}\n\n'),
                                         chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    # A line Python's parser cannot hold (a number past its digit limit, nesting past its depth) is no
    # JSON line either: it was a ValueError or RecursionError traceback, exit 1.
    "ollama number past int digits": ("ollama", [CHUNKED_OK, chunk(b'{"message": {"content": "x"}, "done": false, "n": '
                                                                   + b"9" * 5000 + b"}\n"), LAST_CHUNK]),
    "openai nested past the parser's depth": ("openai", [CHUNKED_OK, chunk(b"data: " + b"[" * 100_000 + b"]" * 100_000
                                                                           + b"\n\n"), LAST_CHUNK]),
    # A key given twice kept only its last value: a second "done" ended the answer at its first word
    # (printed and recorded as the whole turn), a second "content" swapped the text.
    "ollama done given twice": ("ollama", [CHUNKED_OK, chunk(b'{"message": {"content": "The"}, "done": false, "done": true}\n'),
                                           *ndjson({"message": {"content": " end."}, "done": True}), LAST_CHUNK]),
    "openai content given twice": ("openai", [CHUNKED_OK, chunk(b'data: {"choices": [{"delta": {"content": "a", "content": "b"}}]}\n\n'),
                                              chunk(b"data: [DONE]\n\n"), LAST_CHUNK]),
    "ollama cut at its length limit": ("ollama", [CHUNKED_OK, *ndjson({"message": {"content": "The code is "}, "done": False},
        {"message": {"content": ""}, "done": True, "done_reason": "length"}), LAST_CHUNK]),
}


def _home_with(cli, url: str, provider: str) -> None:
    assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
    added = cli("model", "add", "m", "--provider", provider, "--base-url", url, "--model", "x", "--default", "--timeout", "5")
    assert added.exit_code == 0, added.output
    assert cli("agent", "create", "ada").exit_code == 0


def _one_line_69(result) -> str:
    assert result.exit_code == 69, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arcana: error: model 'm' (")
    return line


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_well_formed_raw_stream_is_answered(cli, provider):
    """The positive control: the raw server speaking each protocol properly, UTF-8 beyond ASCII too."""
    with RawModelServer(lambda: GOOD[provider]) as server:
        _home_with(cli, server.url, provider)
        result = cli("run", "ada", "hello there")
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == "All good, café ☕."
        assert cli("model", "check", "m").exit_code == 0


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_an_error_field_of_null_is_no_error(cli, provider):
    """A chunk carrying "error": null beside its text is answered: any "error" key was taken for a
    failure. The failing cases (an error with a message) are among MALFORMED and the in-stream tests."""
    first = {"message": {"content": "All "}, "done": False, "error": None} if provider == "ollama" else \
        {"choices": [{"delta": {"content": "All "}}], "error": None}
    parts = [GOOD[provider][0], *(ndjson if provider == "ollama" else sse)(first), *GOOD[provider][2:]]
    with RawModelServer(lambda: parts) as server:
        _home_with(cli, server.url, provider)
        result = cli("run", "ada", "hello there")
        assert result.exit_code == 0 and result.stdout.strip() == "All good, café ☕.", result.output


def test_an_openai_stream_that_says_why_it_ended_needs_no_done_marker(cli):
    """Some OpenAI-compatible servers end on a choice's finish_reason and send no [DONE]: complete."""
    parts = [CHUNKED_OK, *sse({"choices": [{"delta": {"content": "All good."}, "finish_reason": "stop"}]}), LAST_CHUNK]
    with RawModelServer(lambda: parts) as server:
        _home_with(cli, server.url, "openai")
        result = cli("run", "ada", "hello there")
        assert result.exit_code == 0 and result.stdout.strip() == "All good.", result.output


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_answer_is_one_line_and_exit_69(cli, case):
    provider, parts = MALFORMED[case]
    with RawModelServer(lambda: parts) as server:
        _home_with(cli, server.url, provider)
        _one_line_69(cli("run", "ada", "hello there"))
        _one_line_69(cli("model", "check", "m"))


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_an_answer_that_breaks_off_has_its_line_ended_before_the_error(cli, provider):
    """What arrived stays printed, on a line of its own: the line was left open, so on a terminal the
    error ran on after the text ("The code is arcana: error: ..."). The control: a whole answer."""
    _, parts = MALFORMED[f"{provider} cut at its length limit"]
    with RawModelServer(lambda: parts) as server:
        _home_with(cli, server.url, provider)
        _one_line_69(broken := cli("run", "ada", "hello there"))
        assert broken.stdout == "The code is \n"
    with RawModelServer(lambda: GOOD[provider]) as server:
        assert cli("model", "add", "good", "--provider", provider, "--base-url", server.url, "--model", "x").exit_code == 0
        whole = cli("run", "ada", "hello there", "--model", "good")
        assert whole.exit_code == 0 and whole.stdout == "All good, café ☕.\n", whole.output


def _sessions(cli) -> list[dict]:
    listed = cli("session", "list", "--agent", "ada", "--json")
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.stdout)


@pytest.mark.parametrize("extra", [[], ["--keep-open"]])
def test_a_run_whose_model_fails_leaves_no_session_behind(cli, extra):
    """A failed one-shot run has no turn: it used to leave an empty session open, one per retry."""
    from model_server import LoopbackModelServer, free_port

    with LoopbackModelServer() as server:
        _home_with(cli, f"http://127.0.0.1:{free_port()}", "ollama")  # down
        for _ in range(2):
            _one_line_69(cli("run", "ada", "hello there", *extra))
        assert _sessions(cli) == []
        server.reply = lambda body: "a partial answer that breaks"
        server.stream_error = "out of memory"  # fails mid-answer
        assert cli("model", "add", "mid", "--provider", "ollama", "--base-url", server.url, "--model", "x").exit_code == 0
        broken = cli("run", "ada", "hello there", "--model", "mid", *extra)
        assert broken.exit_code == 69 and "out of memory" in broken.stderr
        assert _sessions(cli) == []
        server.stream_error = None  # the positive control: one answered run, one session with its turn
        done = cli("run", "ada", "hello there", "--model", "mid", *extra, "--json")
        assert done.exit_code == 0, done.output
    (session,) = _sessions(cli)
    assert session["id"] == json.loads(done.stdout)["session_id"] and session["turns"] == 1
    assert (session["closed_at"] is None) == bool(extra)


def _endless(piece: bytes, first: bytes = b""):
    def respond():
        yield CHUNKED_OK + first
        while True:
            yield piece
    return respond


ENDLESS = {
    # a runaway model: well-formed chunks of text, without end
    "endless stream": _endless(chunk((json.dumps({"message": {"content": "la " * 20_000}, "done": False}) + "\n").encode())),
    # one line that never ends: the client used to buffer it all, waiting for its newline
    "endless line": _endless(chunk(b"a" * 65536), first=chunk(b'{"message": {"content": "')),
}


@pytest.mark.parametrize("case", sorted(ENDLESS))
def test_an_answer_without_end_is_cut_off_with_exit_69(cli, case):
    """It used to hang `arcana run` (and `model check`) for good, its memory growing with what it read."""
    import time

    with RawModelServer(ENDLESS[case]) as server:
        _home_with(cli, server.url, "ollama")
        started = time.monotonic()
        line = _one_line_69(cli("run", "ada", "hello there"))
        assert "MiB" in line and time.monotonic() - started < 30
        assert "MiB" in _one_line_69(cli("model", "check", "m"))
        assert server.sent < 64 << 20  # the client stopped reading; nothing near that much was taken in


def test_an_error_status_with_a_body_without_end_is_exit_69(cli):
    def respond():
        yield b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        yield chunk(b"model exploded ")
        while True:
            yield chunk(b"x" * 65536)

    with RawModelServer(respond) as server:
        _home_with(cli, server.url, "openai")
        assert "HTTP 500: model exploded" in _one_line_69(cli("run", "ada", "hello there"))


def test_an_error_status_with_a_body_nested_past_the_parsers_depth_is_exit_69(cli):
    """The server's error message is read from its body for the one line: a body nested past the
    parser's depth was a RecursionError traceback instead."""
    def respond():
        body = b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        yield b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    with RawModelServer(respond) as server:
        _home_with(cli, server.url, "openai")
        assert "HTTP 500" in _one_line_69(cli("run", "ada", "hello there"))


def _trickle(piece: bytes, first: bytes = b"", head: bytes = CHUNKED_OK):
    def respond():
        import time

        yield head + first
        while True:
            time.sleep(0.2)
            yield piece
    return respond


TRICKLES = {
    # well-formed chunks of a few tokens, each well inside the timeout, without end
    "slow stream": _trickle(chunk((json.dumps({"message": {"content": "la "}, "done": False}) + "\n").encode())),
    # a line that never ends, a byte at a time: each wait was inside the timeout, the whole never ended
    "slow line": _trickle(chunk(b"a"), first=chunk(b'{"message": {"content": "')),
    # the headers, or the status line, a byte at a time: only the body's reads looked at the clock
    "slow header": _trickle(b"a", head=b"HTTP/1.1 200 OK\r\nX-Slow: "),
    "slow headers": _trickle(b"X-Slow: a\r\n", head=b"HTTP/1.1 200 OK\r\n"),
    "slow status line": _trickle(b"K", head=b"HTTP/1.1 200 O"),
    "slow error body": _trickle(b"x", head=b"HTTP/1.1 500 Oops\r\nContent-Length: 1000000\r\n\r\n"),
}


@pytest.mark.parametrize("case", sorted(TRICKLES))
def test_an_answer_trickling_without_end_is_cut_off_at_ten_timeouts(cli, case):
    """Each piece came within the model's timeout, so `arcana run` waited for good (cron jobs never
    ended). A whole answer now gets ten times the timeout: 0.5 s here, so 5 s."""
    import time

    with RawModelServer(TRICKLES[case]) as server:
        _home_with(cli, server.url, "ollama")
        assert cli("model", "add", "slow", "--provider", "ollama", "--base-url", server.url, "--model", "x",
                   "--timeout", "0.5").exit_code == 0
        started = time.monotonic()
        result = cli("run", "ada", "hello there", "--model", "slow")
        assert result.exit_code == 69 and "still answering at 10 times its timeout" in result.stderr, result.output
        assert 5 <= time.monotonic() - started < 30
        assert "Traceback" not in result.output


def _redirect_to(target: str, code: int = 302):
    def respond():
        yield (f"HTTP/1.1 {code} Found\r\nLocation: {target}/v1/chat/completions\r\n"
               "Content-Length: 0\r\nConnection: close\r\n\r\n").encode()
    return respond


@pytest.mark.parametrize("code", [301, 302, 303])
def test_a_redirect_is_not_followed_and_the_key_stays_home(cli, monkeypatch, code):
    """urllib followed a 30x to whatever host it named, resending the Authorization header (the API
    key) there as a GET: the key went to a host nobody configured. Now the redirect is the answer."""
    from model_server import LoopbackModelServer

    monkeypatch.setenv("ARCANA_TEST_KEY", "sk-secret")
    with LoopbackModelServer() as elsewhere, RawModelServer(_redirect_to(elsewhere.url, code)) as server:
        assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        for name, url in (("direct", elsewhere.url), ("m", server.url)):
            assert cli("model", "add", name, "--provider", "openai", "--base-url", url, "--model", "x",
                       "--api-key-env", "ARCANA_TEST_KEY", "--timeout", "5").exit_code == 0
        # The control: named as the base_url, the other server is sent the key and answers.
        assert cli("run", "ada", "hello there", "--model", "direct").exit_code == 0
        assert [r["headers"].get("Authorization") for r in elsewhere.requests] == ["Bearer sk-secret"]
        line = _one_line_69(cli("run", "ada", "hello there", "--model", "m"))
        assert f"answered HTTP {code}, a redirect to {elsewhere.url}" in line
        assert len(elsewhere.requests) == 1 and server.requests == 1  # nothing reached the other host
