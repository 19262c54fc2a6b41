"""The built-in Orion hook set: lifecycle, guard, context and memory hooks."""
