"""Errors a user can fix: the CLI prints them as one line and exits non-zero, never a traceback."""


class HarnessError(Exception):
    """A problem with the input, the machine or the cluster, explained in one line."""

    exit_code = 1


class UsageError(HarnessError):
    """Bad input on the command line or in a file (unknown scenario, bad broker id, bad JSON)."""

    exit_code = 2
