"""Chat model providers: one small protocol, Ollama and OpenAI-compatible endpoints over stdlib HTTP."""

from memory.errors import ModelUnavailableError
from memory.models.base import ChatMessage, ChatProvider, collect
from memory.models.registry import provider_for, resolve_model_name

__all__ = ["ChatMessage", "ChatProvider", "ModelUnavailableError", "collect", "provider_for", "resolve_model_name"]
