"""Commit files: newline-delimited JSON, one action per line (PROTOCOL.md "Delta Log Entries")."""

from __future__ import annotations

from typing import Any

from varlake.delta import constants as C
from varlake.delta.actions import ACTIONS_BY_NAME, Action
from varlake.delta.json_fields import load_json
from varlake.errors import CorruptCommitError, UnknownActionError

__all__ = ["action_from_dict", "parse_commit", "parse_commit_lines", "parse_line"]


def action_from_dict(name: str, body: Any, where: str) -> Action | None:
    """Build the action ``name`` from its JSON body; ``None`` for ignored actions.

    Unknown action names raise ``UnknownActionError`` unless listed in
    ``constants.IGNORED_ACTIONS`` (spec'd actions that cannot change a snapshot).
    """
    cls = ACTIONS_BY_NAME.get(name)
    if cls is None:
        if name in C.IGNORED_ACTIONS:
            return None
        raise UnknownActionError(f"unknown action {name!r}", where)
    if not isinstance(body, dict):
        raise CorruptCommitError(f"action {name!r} must be a JSON object", where)
    return cls.from_dict(body, where)


def parse_line(line: str, where: str) -> Action | None:
    """The action of one log line (nested at most ``json_fields.MAX_JSON_DEPTH`` deep)."""
    obj = load_json(line, where, "the log line")
    if not isinstance(obj, dict) or len(obj) != 1:
        raise CorruptCommitError("a log line must be a JSON object with exactly one action key", where)
    ((name, body),) = obj.items()
    return action_from_dict(name, body, where)


def parse_commit(data: bytes, path: str) -> list[Action]:
    """All actions of one commit file; errors name ``path`` and the line."""
    return [action for _, action in parse_commit_lines(data, path)]


def parse_commit_lines(data: bytes, path: str) -> list[tuple[int, Action]]:
    """``(line number, action)`` for every action of one commit file (ignored ones left out)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCommitError(f"not UTF-8 text (byte {exc.start})", path) from exc
    actions: list[tuple[int, Action]] = []
    seen_line = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        seen_line = True
        action = parse_line(line, f"{path} line {lineno}")
        if action is not None:
            actions.append((lineno, action))
    if not seen_line:
        raise CorruptCommitError("empty commit file", path)
    return actions
