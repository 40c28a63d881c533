"""Errors raised when an environment cannot be created."""


class BackendMissingError(RuntimeError):
    """The environment's backend is not installed (e.g. DeepMind Lab); the message says what and how."""


class UnsupportedSetupError(ValueError):
    """The spec asks for a combination this version cannot train (named in the message)."""
