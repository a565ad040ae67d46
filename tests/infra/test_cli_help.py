"""`bgcluster --help` describes every option of every command (issue 41, item 21): an operator
reading `bgcluster admin tournament-create --help` learns what each option means."""

from __future__ import annotations

import argparse
from typing import Any

from infra.cli.bgcluster import _parser


def _commands(parser: argparse.ArgumentParser, path: str = "bgcluster") -> list[tuple[str, Any]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{path} {name}")
    return found


def test_every_option_and_argument_of_every_command_says_what_it_is() -> None:
    silent = []
    commands = _commands(_parser())
    assert any(path == "bgcluster admin tournament-create" for path, _ in commands)
    for path, parser in commands:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if not (action.help or "").strip():
                silent.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert silent == []
