"""The command line, ``python -m analysis <command> --help``: the main parser and its common options,
each further group of commands in a module of its own.

Modules:

- ``main``: the command line: the main parser, its common options (``python -m analysis``, ``layer-gradient``)
- ``training_commands``: the ``train`` command
- ``publish_commands``: ``book-config`` and ``publish-notebooks``, which the publishing workflow runs
- ``original_commands``: ``import-original`` and ``add-token-counts``
- ``calibration_commands``: ``training-calibration``, the simulated error rates of the training rules as a
  Markdown table
- ``split_commands``: ``split``, the split of F1's gap into four steps as a table
"""

from analysis.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
