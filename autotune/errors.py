"""Errors that end a command with one clear paragraph and exit code 2 (tracebacks: --debug)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: a model file, a space, an option or a storage URL.

    The message is one paragraph that states the rule, the value that broke it and the remedy.
    """

    exit_code = 2
