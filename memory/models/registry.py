"""From config.json's ``models`` section to a provider, and which model a run uses."""

from __future__ import annotations

from memory.agents import AgentCard
from memory.config import ArcanaConfig, ModelConfig
from memory.errors import InvalidRequestError, NotFoundError
from memory.home import shown_name
from memory.models.base import ChatProvider


def build_provider(name: str, spec: ModelConfig) -> ChatProvider:
    if spec.provider == "ollama":
        from memory.models.ollama import OllamaProvider

        return OllamaProvider(name, spec.base_url, spec.model, timeout=spec.timeout_seconds)
    from memory.models.openai import OpenAIProvider

    return OpenAIProvider(
        name, spec.base_url, spec.model, api_key_env=spec.api_key_env, timeout=spec.timeout_seconds
    )


def provider_for(config: ArcanaConfig, name: str) -> ChatProvider:
    spec = config.models.get(name)
    if spec is None:
        known = ", ".join(sorted(config.models)) or "none configured"
        raise NotFoundError(f"no model named {shown_name(name)} ({known}); add one with `arcana model add`")
    return build_provider(name, spec)


def resolve_model_name(config: ArcanaConfig, card: AgentCard | None = None, override: str | None = None) -> str:
    """``--model``, else the agent's model, else ``default_model``, else the only one configured."""
    for candidate in (override, card.model if card else None, config.default_model):
        if candidate:
            return candidate
    if len(config.models) == 1:
        return next(iter(config.models))
    raise InvalidRequestError(
        "no model to run with: pass --model, set one with `arcana agent set AGENT --model NAME`, "
        "or `arcana config set default_model NAME`"
    )
