"""The MCP skin: one agent's memory served to an agent host over the Model Context Protocol."""
