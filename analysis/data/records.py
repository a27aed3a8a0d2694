"""The records of a data file: the study's ``{instruction, input?, output}`` or chat records, read
from a JSON list (``.json``) or JSON Lines (``.jsonl``) and validated, each error naming the file,
the record and the field."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from analysis.data.data_errors import DataError
from analysis.data.data_files import DATA_ENV


@dataclass(frozen=True)
class Record:
    """One instruction and its response; ``answer_start``: where in ``output`` the scored answer
    begins (answer-scored conditions only; None: the whole response is scored)."""

    instruction: str
    input: str
    output: str
    answer_start: int | None = None


RECORD_SUFFIXES = (".json", ".jsonl")
CHAT_DROPPED_ROLES = ("system", "developer", "tool")


def load_records(path: str | os.PathLike) -> list[Record]:
    """The validated records of one data file: a JSON list (``.json``) or JSON Lines (``.jsonl``)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"{path}: data file not found (set --data-dir or ${DATA_ENV}, or run `python -m analysis data fetch`)"
        )
    text = _read_text(path)
    if path.suffix == ".jsonl":
        return _json_lines(path, text)
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    return validate_records(payload, str(path))


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def _json_lines(path: Path, text: str) -> list[Record]:
    """Records of a JSON Lines file, one object per non-blank line; errors name the line."""
    records: list[Record] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number} (record {len(records)})"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{where}: malformed JSON at column {error.colno}: {error.msg}") from None
        records.append(parse_record(item, where))
    if not records:
        raise DataError(f"{path}: no records (the file has no non-blank line)")
    return records


def validate_records(payload, source: str) -> list[Record]:
    """Records of a parsed data file, or a DataError naming the file, the record and the field.

    A record is the study's ``{instruction, input?, output}`` or a chat record ``{messages: [...]}``
    (see :func:`chat_record`).
    """
    if not isinstance(payload, list):
        raise DataError(f"{source}: expected a JSON list of records, found {type(payload).__name__}")
    if not payload:
        raise DataError(f"{source}: no records (the file holds an empty list)")
    return [parse_record(item, f"{source}: record {index}") for index, item in enumerate(payload)]


def parse_record(item, where: str) -> Record:
    """One record in the study's format or the chat format; ``where`` prefixes every error."""
    if not isinstance(item, dict):
        raise DataError(f"{where}: expected an object, found {type(item).__name__}")
    if "messages" in item:
        return chat_record(item["messages"], where)
    for field in ("instruction", "output"):
        if field not in item:
            raise DataError(f"{where}: missing field {field!r}")
    for field in ("instruction", "input", "output"):
        if field in item and not isinstance(item[field], str):
            raise DataError(f"{where}: field {field!r} must be a string, found {type(item[field]).__name__}")
    if not item["instruction"].strip():
        raise DataError(f"{where}: field 'instruction' is empty")
    if not item["output"]:
        raise DataError(f"{where}: field 'output' is empty (no response to take a gradient of)")
    return Record(item["instruction"], item.get("input", ""), item["output"])


def _message_text(message, where: str) -> tuple[str, str]:
    """(role, text) of one chat message; content is a string or a list of text parts."""
    if not isinstance(message, dict):
        raise DataError(f"{where}: expected an object with 'role' and 'content', found {type(message).__name__}")
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str):
        raise DataError(f"{where}: field 'role' must be a string, found {type(role).__name__}")
    if isinstance(content, list):
        parts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise DataError(f"{where}: field 'content' holds a part that is not text")
            parts.append(part["text"])
        content = "".join(parts)
    if not isinstance(content, str):
        raise DataError(f"{where}: field 'content' must be a string, found {type(content).__name__}")
    return role, content


def chat_record(messages, where: str) -> Record:
    """A chat record as a study record: the last assistant message is the output, the user
    messages of the same turn (after the assistant message before it) joined by a blank line are
    the instruction. System, developer and tool messages, earlier turns and anything after the
    last assistant message are dropped: the model's own prompt template supplies the rest."""
    if not isinstance(messages, list) or not messages:
        raise DataError(f"{where}: field 'messages' must be a non-empty list of messages")
    turns = [_message_text(m, f"{where}: field 'messages', message {i}") for i, m in enumerate(messages)]
    assistant = [i for i, (role, _) in enumerate(turns) if role == "assistant"]
    if not assistant:
        raise DataError(f"{where}: field 'messages' has no assistant message (the response to take a gradient of)")
    last = assistant[-1]
    start = assistant[-2] + 1 if len(assistant) > 1 else 0
    users = [text for role, text in turns[start:last] if role == "user"]
    unknown = sorted({role for role, _ in turns[start:last]} - {"user", *CHAT_DROPPED_ROLES})
    if unknown:
        raise DataError(f"{where}: field 'messages': unknown role {unknown[0]!r} (expected user, assistant, system)")
    if not any(text.strip() for text in users):
        raise DataError(f"{where}: field 'messages' has no user message before the last assistant message")
    if not turns[last][1]:
        raise DataError(
            f"{where}: field 'messages': the last assistant message is empty (no response to take a gradient of)"
        )
    return Record("\n\n".join(users), "", turns[last][1])
