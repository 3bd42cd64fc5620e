from __future__ import annotations

import time
from typing import Annotated

import typer

from pydantic import ValidationError

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from memory.home import check_name, shown_name
from memory.config import ModelConfig, editing_config, load_config
from memory.errors import InvalidRequestError, NotFoundError

NameArg = Annotated[str, typer.Argument(help="Model name (yours to choose).")]
CHECK_PROMPT = "Reply with the single word: ok"


def _describe(name: str, spec: ModelConfig, default: str | None) -> dict:
    return {"name": name, **spec.model_dump(mode="json"), "default": name == default}


@command("add")
def add(
    cli: CliContext,
    out: Out,
    name: NameArg,
    provider: Annotated[str, typer.Option("--provider", help="ollama or openai (any OpenAI-compatible server).")],
    base_url: Annotated[str, typer.Option("--base-url", help="e.g. http://127.0.0.1:11434")],
    model: Annotated[str, typer.Option("--model", help="The model id the endpoint serves.")],
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key (never stored).")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, max=3600, help="Seconds to wait for the endpoint.")] = 120.0,
    default: Annotated[bool, typer.Option("--default", help="Make this the default model.")] = False,
) -> None:
    """Add a model endpoint to config.json."""
    check_name("model", name)
    try:
        spec = ModelConfig(provider=provider, base_url=base_url, model=model, api_key_env=api_key_env, timeout_seconds=timeout)
    except ValidationError as exc:
        first = exc.errors()[0]
        reason = first["msg"].removeprefix("Value error, ")
        raise typer.BadParameter(f"{first['loc'][0]}: {reason}") from None
    if name in load_config(cli.home.config_path).models:  # refused before the home is made
        raise InvalidRequestError(f"a model named '{name}' already exists; `arcana model remove {name}` first")
    cli.home.ensure()
    with editing_config(cli.home.config_path) as edit:  # another command's change made meanwhile is kept
        config = edit.config
        if name in config.models:
            raise InvalidRequestError(f"a model named '{name}' already exists; `arcana model remove {name}` first")
        config.models = {**config.models, name: spec}
        if default:
            config.default_model = name
    out.data(_describe(name, spec, config.default_model), text=lambda: name)


@command("list")
def list_(cli: CliContext, out: Out) -> None:
    """List configured models."""
    config = cli.config
    rows = [_describe(n, s, config.default_model) for n, s in sorted(config.models.items())]
    out.data(
        rows,
        columns=("name", "provider", "model", "base_url", "api_key_env", "default"),
        rows=lambda: [
            (r["name"], r["provider"], r["model"], r["base_url"], r["api_key_env"] or "-", "*" if r["default"] else "")
            for r in rows
        ],
    )


@command("remove")
def remove(cli: CliContext, out: Out, name: NameArg) -> None:
    """Remove a model from config.json."""
    missing = NotFoundError(f"no model named {shown_name(name)}; see `arcana model list`")
    if name not in load_config(cli.home.config_path).models:  # refused before any lock file is made
        raise missing
    with editing_config(cli.home.config_path) as edit:  # another command's change made meanwhile is kept
        config = edit.config
        if name not in config.models:
            raise missing
        if config.default_model == name:  # first: the config refuses a default_model no entry registers
            config.default_model = None
        config.models = {n: s for n, s in config.models.items() if n != name}
    out.data({"removed": name}, text=lambda: name)
    users = [c.name for c in cli.agents.scan().cards if c.model == name]
    if users:
        out.warn(f"agents still set to '{name}': {', '.join(users)}; `arcana agent set AGENT --model NAME`")


@command("check")
def check(cli: CliContext, out: Out, name: NameArg) -> None:
    """Send one short chat to the model and report the round trip (exit 69 if it fails)."""
    from memory.models.base import ChatMessage, collect
    from memory.models.registry import provider_for

    provider = provider_for(cli.config, name)
    started = time.perf_counter()
    reply = collect(provider, [ChatMessage("user", CHECK_PROMPT)], temperature=0.0)
    elapsed = round((time.perf_counter() - started) * 1000, 1)
    result = {"name": name, "ok": True, "latency_ms": elapsed, "reply": reply.strip()[:200]}
    out.data(result, text=lambda: f"{name}: ok in {elapsed} ms — {result['reply']!r}")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Chat model endpoints (Ollama or OpenAI-compatible) agents run with.", no_args_is_help=True)
    app.add_typer(group, name="model")
    add_commands(group, add, list_, remove, check)
