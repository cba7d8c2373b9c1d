"""The package version (pyproject.toml reads it from here; CHANGELOG.md lists each one)."""

__version__ = "0.1.0"
