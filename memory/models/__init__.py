"""Chat model providers: one small protocol, Ollama and OpenAI-compatible endpoints over stdlib HTTP."""
