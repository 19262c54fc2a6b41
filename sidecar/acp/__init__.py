"""The Agent Client Protocol dialect: how the one session core appears to an ACP client (docs/PROTOCOL.md)."""
