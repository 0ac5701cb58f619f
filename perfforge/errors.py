"""Exceptions that the command line turns into one clear line for the user.

Every subclass message says what was wrong and what to do about it; the CLI prints it as
`perfforge: error: <message>` and exits with status 2. Anything else is a bug and keeps its traceback.
"""


class PerfforgeError(Exception):
    """Base of every error a user can fix by changing their input."""


class ConfigError(PerfforgeError):
    """An option, flag or config file is wrong."""


class SourceError(PerfforgeError):
    """A repository source does not exist, is not a git repository, or cannot be cloned."""


class DatasetError(PerfforgeError):
    """A dataset directory is missing files or holds records of another schema version."""


class BackendError(PerfforgeError):
    """A model endpoint is down, refuses the request, or does not serve the named model."""
