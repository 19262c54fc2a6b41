"""Adversarial tests: each attacks one safety rule through the public surface."""
