"""The command line, ``python -m analysis <command> --help``: the main parser and the common options in
``main``, each further group of commands in a module of its own (``original``, ``training``, ``publish``,
``calibration``)."""

from analysis.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
