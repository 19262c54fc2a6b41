"""What a desktop shell does: spawn the sidecar, speak the wire, subscribe to events, answer permission requests."""
