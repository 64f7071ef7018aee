"""The checker's own error type."""

from __future__ import annotations


class CheckError(Exception):
    """The checker itself could not run: installation, bad arguments, a malformed module
    header, a lakefile option it cannot pass on. ``main`` prints it and exits with status 2."""
