"""The `aglw` command-line interface."""
