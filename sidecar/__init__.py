"""Orion Sidecar: runs Claude agent sessions for a desktop frontend over line-delimited JSON-RPC on stdio."""
