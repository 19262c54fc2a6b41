"""The warm Python hook launcher: the child script (child.py, stdlib only) lives alone in this directory so nothing here shadows a hook's imports."""
