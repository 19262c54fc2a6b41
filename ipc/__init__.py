"""Wire layer: line framing on byte streams, the JSON-RPC peer, and the protocol models. Imports nothing else from the project."""
