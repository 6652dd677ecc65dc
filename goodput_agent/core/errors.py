"""Errors the user sees as one line (exit code 2), never as a traceback."""


class BadInput(Exception):
    """Input that cannot be investigated; the message names the file and the problem."""
