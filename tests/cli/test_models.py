"""Chat providers against a real loopback server: streaming, keys, errors; `arcana model`."""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import free_port

from memory.config import load_config
from memory.errors import ModelUnavailableError, UnsetVariableError
from memory.models.base import ChatMessage, astream, collect
from memory.models.ollama import OllamaProvider
from memory.models.openai import OpenAIProvider

HELLO = [ChatMessage("system", "be brief"), ChatMessage("user", "hello")]


def fixed(text):
    return lambda body: text


def test_ollama_streams_ndjson_chunks(model_server):
    model_server.reply = fixed("Hello from a streaming Ollama model.")
    provider = OllamaProvider("local", model_server.url, "llama3")
    chunks = list(provider.stream(HELLO, temperature=0.0))
    assert len(chunks) > 3 and "".join(chunks) == "Hello from a streaming Ollama model."
    request = model_server.requests[-1]
    assert request["path"] == "/api/chat"
    assert request["body"]["model"] == "llama3" and request["body"]["stream"] is True
    assert request["body"]["options"] == {"temperature": 0.0}
    assert request["body"]["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


@pytest.mark.parametrize("base", ["", "/v1"])
def test_openai_streams_sse_and_sends_the_key_from_env(model_server, monkeypatch, base):
    model_server.reply = fixed("Hello over server-sent events.")
    monkeypatch.setenv("LOOPBACK_KEY", "sk-test-123")
    provider = OpenAIProvider("oa", model_server.url + base, "gpt-x", api_key_env="LOOPBACK_KEY")
    chunks = list(provider.stream(HELLO))
    assert len(chunks) > 2 and "".join(chunks) == "Hello over server-sent events."
    request = model_server.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-123"
    assert "temperature" not in request["body"]


def test_openai_missing_key_env_is_a_clear_config_error(model_server, monkeypatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    provider = OpenAIProvider("oa", model_server.url, "gpt-x", api_key_env="NOT_SET_KEY")
    with pytest.raises(UnsetVariableError, match=r"\$NOT_SET_KEY"):
        list(provider.stream(HELLO))
    assert model_server.requests == []


def test_a_key_no_http_header_can_carry_is_one_line_exit_2_never_shown(arcana_home, model_server):
    """An API key variable holding a line break (a key file saved with CRLF) or a non-ASCII character
    ended `model check` and every run in a Python traceback (exit 1) whose last line printed the key."""
    from runner import run_arcana

    model_server.reply = fixed("ok")
    assert run_arcana("model", "add", "oa", "--provider", "openai", "--base-url", model_server.url, "--model", "gpt-x",
                      "--api-key-env", "LOOPBACK_KEY").returncode == 0
    for key in ("sk-secret\r\n", "sk-secret\r\nX-Injected: 1", "sk-sécret"):
        done = run_arcana("model", "check", "oa", env={"LOOPBACK_KEY": key})
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert "$LOOPBACK_KEY" in done.stderr and "with the key alone" in done.stderr and "secret" not in done.stderr
    assert model_server.requests == []  # nothing was sent
    checked = run_arcana("model", "check", "oa", env={"LOOPBACK_KEY": "sk-secret-123"})  # control: a clean key
    assert checked.returncode == 0, checked.stderr
    assert model_server.requests[-1]["headers"]["Authorization"] == "Bearer sk-secret-123"


@pytest.mark.parametrize("cls", [OllamaProvider, OpenAIProvider])
def test_endpoint_down_names_model_and_url(cls):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ModelUnavailableError, match=r"model 'm' .* is unreachable"):
        collect(cls("m", url, "x", timeout=2), HELLO)


@pytest.mark.parametrize("cls", [OllamaProvider, OpenAIProvider])
def test_http_error_carries_the_servers_message(model_server, cls):
    model_server.fail_status = 500
    with pytest.raises(ModelUnavailableError, match="HTTP 500: model exploded"):
        collect(cls("m", model_server.url, "x"), HELLO)


@pytest.mark.parametrize("cls", [OllamaProvider, OpenAIProvider])
def test_an_error_inside_the_stream_is_raised_not_swallowed(model_server, cls):
    model_server.reply = fixed("partial answer that breaks")
    model_server.stream_error = "out of memory"
    chunks = []
    with pytest.raises(ModelUnavailableError, match="out of memory"):
        for chunk in cls("m", model_server.url, "x").stream(HELLO):
            chunks.append(chunk)
    assert chunks == ["partial "]  # what arrived before the error was delivered


def test_timeout_is_reported(model_server):
    model_server.delay = 1.5
    with pytest.raises(ModelUnavailableError, match="within 0.3s|timeout 0.3s"):
        collect(OllamaProvider("slow", model_server.url, "x", timeout=0.3), HELLO)


async def test_astream_does_not_block_the_loop(model_server):
    model_server.reply = fixed("tick tock tick tock")
    model_server.delay = 0.3
    ticks = []

    async def ticker():
        for _ in range(5):
            ticks.append(1)
            await asyncio.sleep(0.03)

    task = asyncio.create_task(ticker())
    text = "".join([c async for c in astream(OllamaProvider("m", model_server.url, "x"), HELLO)])
    await task
    assert text == "tick tock tick tock" and len(ticks) == 5


def test_model_cli_add_list_check_remove(cli, model_server, arcana_home, monkeypatch):
    model_server.reply = fixed("ok")
    monkeypatch.setenv("MY_KEY", "sk-secret-value")
    added = cli("model", "add", "oa", "--provider", "openai", "--base-url", model_server.url,
                "--model", "gpt-x", "--api-key-env", "MY_KEY", "--default", "--json")
    assert added.exit_code == 0, added.output
    raw = arcana_home.config_path.read_text()
    assert "MY_KEY" in raw and "sk-secret-value" not in raw  # the key is never written
    assert load_config(arcana_home.config_path).default_model == "oa"
    listed = json.loads(cli("model", "list", "--json").stdout)
    assert [(m["name"], m["provider"], m["default"]) for m in listed] == [("oa", "openai", True)]
    checked = cli("model", "check", "oa", "--json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["reply"] == "ok"
    assert model_server.requests[-1]["headers"]["Authorization"] == "Bearer sk-secret-value"
    assert cli("model", "remove", "oa").exit_code == 0
    config = load_config(arcana_home.config_path)
    assert config.models == {} and config.default_model is None


def test_model_cli_rejects_bad_input(cli):
    bad_provider = cli("model", "add", "x", "--provider", "gemini", "--base-url", "http://h", "--model", "m")
    assert bad_provider.exit_code == 2 and "provider must be" in bad_provider.output
    bad_url = cli("model", "add", "x", "--provider", "ollama", "--base-url", "localhost:11434", "--model", "m")
    assert bad_url.exit_code == 2 and "base_url" in bad_url.output
    bad_name = cli("model", "add", "../x", "--provider", "ollama", "--base-url", "http://h", "--model", "m")
    assert bad_name.exit_code == 2 and "invalid model name '../x'" in bad_name.output
    assert cli("model", "check", "nope").exit_code == 3
    assert cli("model", "remove", "nope").exit_code == 3


@pytest.mark.parametrize("url", ["http://[::1", "http://host:abc", "http://user:secret@host", "http://host:99999",
                                 "http://host/?api-version=1", "http://host/v1?", "http://host/v1#top"])
def test_a_base_url_no_request_could_use_is_refused_when_added(cli, arcana_home, url):
    """Such a URL was stored, then `model check` and `run` ended in a ValueError/InvalidURL traceback
    (or, with a ?query or #fragment, posted to "/": the API's path went into the query)."""
    result = cli("model", "add", "x", "--provider", "ollama", "--base-url", url, "--model", "m")
    assert result.exit_code == 2 and "base_url" in result.stderr, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.stderr
    assert load_config(arcana_home.config_path).models == {}
    port = free_port()  # positive control: an IPv6 loopback URL with a port is fine
    assert cli("model", "add", "v6", "--provider", "ollama", "--base-url", f"http://[::1]:{port}", "--model", "m").exit_code == 0


def test_model_check_down_exits_69(cli):
    url = f"http://127.0.0.1:{free_port()}"
    assert cli("model", "add", "down", "--provider", "ollama", "--base-url", url, "--model", "m").exit_code == 0
    checked = cli("model", "check", "down")
    assert checked.exit_code == 69
    assert "unreachable" in checked.output


def test_config_set_default_model_names_a_registered_model_as_agent_set_does(arcana_home, no_embedder):
    """`config set default_model nope` was stored (exit 0) while `agent set --model nope` was exit 3: every
    later run then failed on a model nothing registers. Both are exit 3 now, the file unchanged."""
    from runner import run_arcana

    run_arcana("agent", "create", "ada")
    before = arcana_home.config_path.read_text()
    for args in (["config", "set", "default_model", "nope"], ["agent", "set", "ada", "--model", "nope"]):
        done = run_arcana(*args)
        assert done.returncode == 3, (args, done.stderr)
        [line] = done.stderr.splitlines()
        assert "no model named 'nope'" in line and "arcana model list" in line and "arcana model add" in line
    assert arcana_home.config_path.read_text() == before
    # Controls: a registered model is taken by both; null clears the default again.
    assert run_arcana("model", "add", "local", "--provider", "ollama", "--base-url", "http://127.0.0.1:9",
                      "--model", "m").returncode == 0
    assert run_arcana("config", "set", "default_model", "local").returncode == 0
    assert load_config(arcana_home.config_path).default_model == "local"
    assert run_arcana("agent", "set", "ada", "--model", "local").returncode == 0
    assert run_arcana("config", "set", "default_model", "null").returncode == 0
    assert load_config(arcana_home.config_path).default_model is None


def test_a_hand_edited_default_model_naming_no_model_is_refused_at_load(arcana_home, no_embedder):
    """`config set default_model nope` is refused (exit 3), but the same name written into config.json by
    hand loaded, `config validate` said ok, and only a later `run` failed. Loading refuses it now as every
    other invalid value in the file: one line naming the file and the key, exit 4 (the file unchanged)."""
    from runner import run_arcana

    assert run_arcana("remember", "Deploys happen on Tuesdays", "--agent", "ada").returncode == 0
    config = json.loads(arcana_home.config_path.read_text())
    model = {"provider": "ollama", "base_url": "http://127.0.0.1:9", "model": "m"}
    arcana_home.config_path.write_text(json.dumps({**config, "default_model": "nope"}))
    written = arcana_home.config_path.read_text()
    for args in (["config", "validate"], ["recall", "deploys", "--agent", "ada"], ["model", "list"]):
        done = run_arcana(*args)
        assert done.returncode == 4 and done.stdout == "", (args, done.stderr)
        [line] = done.stderr.splitlines()
        assert str(arcana_home.config_path) in line and "default_model: no model named 'nope'" in line, line
    assert arcana_home.config_path.read_text() == written
    # Controls: the same file with the model registered loads; the CLI path still refuses a new name with 3.
    arcana_home.config_path.write_text(json.dumps({**config, "models": {"nope": model}, "default_model": "nope"}))
    assert run_arcana("config", "validate").returncode == 0
    assert "Deploys" in run_arcana("recall", "deploys", "--agent", "ada").stdout
    assert run_arcana("config", "set", "default_model", "other").returncode == 3
