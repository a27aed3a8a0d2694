"""The study's 56 data files as conditions, found locally or downloaded, and validated.

A condition is (dataset, setting, responses): e.g. ``aqua/detailed/correct`` is the AQuA file
with GPT-4o chains of thought and correct responses. Files are looked up in ``--data-dir``, else
in ``$LAYER_GRADIENT_DATA``, else in ``./data/layer_gradient``. ``python -m analysis data fetch``
downloads them from the original study's repository at a pinned commit and checks their sha256.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO

import numpy as np

from analysis.core.errors import StudyError
from analysis.core.vocabulary import (
    ANSWER_PHRASE,
    ANSWER_SETTINGS,
    CORRECT,
    COT_SETTINGS,
    LENGTH_CONTROL_SETTINGS,
    MATH_REASONING,
    REASONING_DATASETS,
    RESPONSES,
    SCORED_SUBSET_SETTINGS,
)

DATA_ENV = "LAYER_GRADIENT_DATA"
DEFAULT_DATA_DIR = Path("data/layer_gradient")
SOURCE_REPOSITORY = "MingLiiii/Layer_Gradient"
SOURCE_COMMIT = "e2072e8daa9f250cea025b2d3fa9590a901ca766"
SOURCE_URL = f"https://raw.githubusercontent.com/{SOURCE_REPOSITORY}/{SOURCE_COMMIT}/data"
DOWNLOAD_TIMEOUT = 60  # seconds without an answer from the server

MATH_DATASETS = {"math-algebra": "algebra", "math-counting": "counting_probability", "math-geometry": "geometry"}
_COT_SUFFIX = {"none": "no_cot", "simplified": "with_cot", "detailed": "with_cot_gpt4o"}
_WIKI_STEM = {
    "len100": "popular_wikipedia_100",
    "len500": "popular_wikipedia_500",
    "len1000": "popular_wikipedia_1000",
    "unpopular": "long_tail_wikipedia",
}


class DataError(StudyError, ValueError):
    """A data file, a record or a condition key that the study cannot use."""


@dataclass(frozen=True)
class AnswerView:
    """How an answer-scored condition builds each instruction's response from the study's files.

    The response is the ``context`` condition's response (another instruction's with
    ``other_instruction``: the next record of the file, the last taking the first; with ``shuffled``
    its words in a seeded random order, ``shuffled_words``; no context: nothing), a new line where
    there is a context, ``ANSWER_PHRASE`` and the answer, which is the same instruction's response in
    the ``answer`` condition (None CoT). Only the answer's tokens are scored. ``appended`` False: the
    context's response already ends with the phrase and the answer (Simplified CoT), which is
    checked, and is taken as it is.
    """

    answer: str
    context: str | None = None
    appended: bool = True
    other_instruction: bool = False
    shuffled: bool = False


@dataclass(frozen=True)
class Condition:
    """One data file of the study, or a view of one: length-controlled or answer-scored.

    ``length_reference`` names the condition whose response token counts cap this one's
    responses; it is set only for the length-control settings. ``scored_reference`` names the
    condition whose response token count is how many of this one's response tokens its loss scores,
    a seeded random subset of them (the text itself is whole); set only for the scored-subset
    settings. ``answer`` says how an answer-scored condition builds its responses (``AnswerView``);
    set only for those.
    """

    dataset: str
    setting: str
    responses: str
    relative_path: str
    length_reference: str | None = None
    answer: AnswerView | None = None
    scored_reference: str | None = None

    @property
    def is_view(self) -> bool:
        """Whether the condition is a view of the study's files rather than one of the 56 files."""
        return self.length_reference is not None or self.answer is not None or self.scored_reference is not None

    @property
    def token_reference(self) -> str | None:
        """The condition whose response token counts this one's responses follow (a length control's
        cap, a scored subset's size), None for the others."""
        return self.length_reference or self.scored_reference

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.setting}/{self.responses}"

    @property
    def family(self) -> str:
        if self.dataset == "wiki":
            return "wiki_knowledge"
        return "math_reasoning" if self.dataset in MATH_REASONING else "commonsense_reasoning"


def _folder(base: str, responses: str) -> str:
    return base if responses == "correct" else f"{base}_wrong_answer_shuffle"


def _file_conditions(responses: str) -> list[Condition]:
    """The conditions that are data files, of one response type: reasoning, MATH and Wiki."""
    conditions: list[Condition] = []
    for dataset in REASONING_DATASETS:
        for setting in COT_SETTINGS:
            path = f"{_folder('cot_500', responses)}/{dataset}_train_{_COT_SUFFIX[setting]}.json"
            conditions.append(Condition(dataset, setting, responses, path))
    for dataset, stem in MATH_DATASETS.items():
        for setting in ("simplified", "detailed"):
            path = f"{_folder('lighteval_math', responses)}/{stem}_{_COT_SUFFIX[setting]}.json"
            conditions.append(Condition(dataset, setting, responses, path))
    for setting, stem in _WIKI_STEM.items():
        conditions.append(Condition("wiki", setting, responses, f"{_folder('wiki_popularity', responses)}/{stem}.json"))
    return conditions


def _build_registry() -> dict[str, Condition]:
    registry = {c.key: c for responses in RESPONSES for c in _file_conditions(responses)}
    for condition in list(registry.values()):
        if condition.setting != "detailed":
            continue
        for setting, reference in LENGTH_CONTROL_SETTINGS.items():
            reference_key = f"{condition.dataset}/{reference}/{condition.responses}"
            if reference_key in registry:
                derived = Condition(
                    condition.dataset, setting, condition.responses, condition.relative_path, reference_key
                )
                registry[derived.key] = derived
    registry.update({c.key: c for c in _answer_conditions(registry)})
    registry.update({c.key: c for c in _scored_conditions(registry)})
    return registry


def _scored_conditions(registry: dict[str, Condition]) -> list[Condition]:
    """The scored-subset views of each Detailed-CoT file with correct responses whose dataset has a
    None-CoT file: the same text, as many scored tokens as the None-CoT response has."""
    out = []
    for condition in list(registry.values()):
        if condition.setting != "detailed" or condition.responses != CORRECT or condition.is_view:
            continue
        for setting, reference in SCORED_SUBSET_SETTINGS.items():
            reference_key = f"{condition.dataset}/{reference}/{CORRECT}"
            if reference_key in registry:
                out.append(
                    Condition(
                        condition.dataset, setting, CORRECT, condition.relative_path, scored_reference=reference_key
                    )
                )
    return out


def _answer_conditions(registry: dict[str, Condition]) -> list[Condition]:
    """The answer-scored views (``AnswerView``) of every dataset with a None-CoT file, correct responses."""
    views = {
        "none_answer": lambda d: AnswerView(f"{d}/none/{CORRECT}"),
        "simplified_answer": lambda d: AnswerView(f"{d}/none/{CORRECT}", f"{d}/simplified/{CORRECT}", appended=False),
        "detailed_answer": lambda d: AnswerView(f"{d}/none/{CORRECT}", f"{d}/detailed/{CORRECT}"),
        "detailed_other_answer": lambda d: AnswerView(
            f"{d}/none/{CORRECT}", f"{d}/detailed/{CORRECT}", other_instruction=True
        ),
        "detailed_shuffled_answer": lambda d: AnswerView(
            f"{d}/none/{CORRECT}", f"{d}/detailed/{CORRECT}", shuffled=True
        ),
    }
    datasets = [c.dataset for c in registry.values() if c.setting == "none" and c.responses == CORRECT]
    out = []
    for dataset in datasets:
        for setting in ANSWER_SETTINGS:
            view = views[setting](dataset)
            file = registry[view.context or view.answer].relative_path
            out.append(Condition(dataset, setting, CORRECT, file, answer=view))
    return out


CONDITIONS: dict[str, Condition] = _build_registry()


def study_conditions() -> list[Condition]:
    """The 56 conditions that are data files of the study (no length-controlled or answer-scored views)."""
    return [c for c in CONDITIONS.values() if not c.is_view]


def get_condition(key: str) -> Condition:
    """The registered condition with this key, or a DataError listing what exists."""
    try:
        return CONDITIONS[key]
    except KeyError:
        datasets = sorted({c.dataset for c in CONDITIONS.values()})
        raise DataError(
            f"unknown condition {key!r}: a condition is dataset/setting/responses, e.g. aqua/detailed/correct; "
            f"datasets: {', '.join(datasets)} (see `python -m analysis data list`)"
        ) from None


def conditions_matching(
    datasets=None,
    settings=None,
    responses=None,
    *,
    length_control: bool = False,
    answer_scored: bool = False,
    scored_subset: bool = False,
) -> list[Condition]:
    """Registered conditions filtered by dataset, setting and response type (the length-control,
    answer-scored and scored-subset views only when asked for)."""
    chosen = []
    for condition in CONDITIONS.values():
        if condition.length_reference is not None and not length_control:
            continue
        if condition.answer is not None and not answer_scored:
            continue
        if condition.scored_reference is not None and not scored_subset:
            continue
        if datasets is not None and condition.dataset not in datasets:
            continue
        if settings is not None and condition.setting not in settings:
            continue
        if responses is not None and condition.responses not in responses:
            continue
        chosen.append(condition)
    return chosen


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Where the data files are: the argument, else $LAYER_GRADIENT_DATA, else ./data/layer_gradient."""
    if explicit:
        return Path(explicit)
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    return DEFAULT_DATA_DIR


@lru_cache(maxsize=1)
def expected_sha256() -> dict[str, str]:
    """The published sha256 of every data file, keyed by relative path."""
    table = {}
    for line in (Path(__file__).with_name("SHA256SUMS")).read_text().splitlines():
        digest, path = line.split(maxsplit=1)
        table[path.removeprefix("./")] = digest
    return table


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    """sha256 hex digest of a file's bytes, read in chunks (the original study's files are large)."""
    with open(path, "rb") as handle:
        return stream_sha256(handle, chunk)


def stream_sha256(handle: IO[bytes], chunk: int = 1 << 22) -> str:
    """sha256 hex digest of an open binary stream's remaining bytes, read in chunks."""
    digest = hashlib.sha256()
    while block := handle.read(chunk):
        digest.update(block)
    return digest.hexdigest()


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


# The seed of the instructions a profile takes from each file (a fixed, stated seed: every run
# takes the same ones).
SAMPLE_SEED = 0


def sample_ranks(dataset: str, count: int, seed: int = SAMPLE_SEED) -> np.ndarray:
    """A random rank for each record index 0..count-1 of a dataset's files, the same for every
    file of the dataset (and for index i whatever the file's length): the first of a seeded
    stream of uniform numbers, one per index."""
    rng = np.random.default_rng([int(seed), zlib.crc32(dataset.encode())])
    return rng.random(int(count))


def sample_ids(
    dataset: str, count: int, limit: int | None, *, seed: int = SAMPLE_SEED, excluded: Iterable[int] = ()
) -> list[int]:
    """The record indices a run with ``limit`` samples per file takes from a file of ``count``
    records: a seeded random sample (all of them without a limit), sorted.

    The first N records of a file are not a random sample of it (StrategyQA's None-CoT pairs
    whose irrelevant answer equals the correct one begin at index 58, for one). Every file of a
    dataset gets the same ids: the same questions under every setting, with correct and
    irrelevant responses, and on every model. Indices in ``excluded`` are passed over in the
    seeded order (the draw topped up with the next ranked ones), and taken last only when too few
    others are left.
    """
    if limit is None or limit >= count:
        return list(range(int(count)))
    return sorted(int(i) for i in sample_order(dataset, count, seed, excluded)[: int(limit)])


def sample_order(dataset: str, count: int, seed: int = SAMPLE_SEED, excluded: Iterable[int] = ()) -> np.ndarray:
    """Every record index of a file of ``count`` records in the seeded order that ``sample_ids``
    draws from (it takes the first ``limit``), the indices in ``excluded`` moved to the end."""
    order = np.argsort(sample_ranks(dataset, count, seed), kind="stable")
    skipped = np.isin(order, np.fromiter((int(i) for i in excluded), dtype=int))
    return np.concatenate([order[~skipped], order[skipped]])


def dataset_sample_ids(
    dataset: str, count: int, limit: int | None, *, directory: str | os.PathLike | None = None, seed: int = SAMPLE_SEED
) -> list[int]:
    """``sample_ids`` of a study dataset, drawn from the instructions whose None-CoT irrelevant
    response differs from the correct one (``identical_response_ids``) for every file of the
    dataset: so that F3's None-CoT comparison has the profile's n, and every setting keeps the
    same questions. Datasets without such pairs (or without None-CoT files) keep the plain draw;
    a run of all records takes all of them."""
    if limit is None or limit >= count:
        return list(range(int(count)))
    return sample_ids(dataset, count, limit, seed=seed, excluded=identical_response_ids(dataset, "none", directory))


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


def condition_records(condition: Condition, path: Path, directory: str | os.PathLike | None = None) -> list[Record]:
    """The records of a condition: those of its file at ``path``, or for an answer-scored view the
    responses it builds (``answer_records``)."""
    return load_records(path) if condition.answer is None else answer_records(condition, directory)


def answer_records(condition: Condition, directory: str | os.PathLike | None = None) -> list[Record]:
    """The records of an answer-scored condition (``AnswerView``), each with where its answer begins.

    The answer's place comes from the construction (the offset at which it was appended, or where
    the Simplified-CoT response's checked ending puts it), never from a search of the text: the
    answer often appears earlier in the reasoning too. A record whose instruction differs from the
    answer file's, or a Simplified-CoT response that does not end with the phrase and the answer,
    is a DataError naming the file and the record.
    """
    view = condition.answer
    if view is None:
        raise DataError(f"condition {condition.key} is not answer-scored")
    answer_path = data_dir(directory) / CONDITIONS[view.answer].relative_path
    answers = load_records(answer_path)
    if view.context is None:
        return [Record(a.instruction, a.input, ANSWER_PHRASE + a.output, len(ANSWER_PHRASE)) for a in answers]
    context_path = data_dir(directory) / CONDITIONS[view.context].relative_path
    contexts = load_records(context_path)
    if len(contexts) != len(answers):
        raise DataError(f"{context_path}: {len(contexts)} records, but {answer_path} has {len(answers)}")
    return [
        _answer_record(view, contexts, index, answer=answer, where=f"{context_path}: record {index}")
        for index, answer in enumerate(answers)
    ]


def _answer_record(view: AnswerView, contexts: list[Record], index: int, *, answer: Record, where: str) -> Record:
    """Record ``index`` of an answer-scored view (see ``answer_records``)."""
    own = contexts[index]
    if (own.instruction, own.input) != (answer.instruction, answer.input):
        raise DataError(f"{where}: its instruction is not that of the None-CoT file's record {index}")
    if not view.appended:
        ending = "\n" + ANSWER_PHRASE + answer.output
        if not own.output.endswith(ending):
            raise DataError(
                f"{where}: the response does not end with {ending!r} (the None-CoT answer after the phrase)"
            )
        return Record(own.instruction, own.input, own.output, len(own.output) - len(answer.output))
    context = contexts[(index + 1) % len(contexts)] if view.other_instruction else own
    text = shuffled_words(context.output, seed=index) if view.shuffled else context.output
    before = text + "\n" + ANSWER_PHRASE
    return Record(own.instruction, own.input, before + answer.output, len(before))


SHUFFLE_SEED = 0


def shuffled_words(text: str, *, seed: int) -> str:
    """``text``'s words (split at white space) in a random order drawn by a generator seeded by
    ``seed``, joined by single spaces: the same words, no reasoning order."""
    words = text.split()
    order = np.random.default_rng([SHUFFLE_SEED, seed]).permutation(len(words))
    return " ".join(words[i] for i in order)


@dataclass(frozen=True)
class ResolvedData:
    """A condition (or a file given by path) with its file located and checked."""

    condition: Condition
    path: Path
    sha256: str
    sha256_ok: bool | None  # None: a file outside the registry, no published hash


def resolve(spec: str, directory: str | os.PathLike | None = None) -> ResolvedData:
    """Locate the data of a condition key or a data file path (.json, .jsonl), with its sha256 checked."""
    if spec.endswith(RECORD_SUFFIXES):
        path = Path(spec)
        if not path.is_file():
            raise DataError(f"{path}: data file not found")
        digest = file_sha256(path)
        return ResolvedData(Condition(path.stem, "", "", str(path)), path, digest, None)
    condition = get_condition(spec)
    path = data_dir(directory) / condition.relative_path
    if not path.is_file():
        raise DataError(
            f"{path}: data file of condition {condition.key} not found (set --data-dir or ${DATA_ENV}, "
            "or run `python -m analysis data fetch`)"
        )
    digest = file_sha256(path)
    return ResolvedData(condition, path, digest, digest == expected_sha256()[condition.relative_path])


def fetch(directory: str | os.PathLike | None = None, base_url: str = SOURCE_URL, force: bool = False) -> list[Path]:
    """Download every data file of the study into ``directory`` and verify its sha256.

    Files already present with the right hash are kept (all are downloaded again with
    ``force``); a present file with another hash is replaced; a download with a wrong hash is
    removed and reported. Returns the files written.
    """
    import pooch  # only a download needs it (a machine without it can still read the data)

    target = data_dir(directory)
    written = []
    with _quiet(pooch.get_logger()):
        for relative, digest in sorted(expected_sha256().items()):
            path = target / relative
            url = f"{base_url}/{relative}"
            if force:
                scratch = path.with_name(f".{path.name}.part")
                scratch.unlink(missing_ok=True)
                download(url, scratch, digest)
                os.replace(scratch, path)
                written.append(path)
            elif download(url, path, digest):
                written.append(path)
    return written


def download(url: str, path: Path, digest: str) -> bool:
    """Make ``path`` the file at ``url`` whose sha256 is ``digest``; False when it already was.

    pooch streams the download into a temporary file beside ``path`` and moves it into place only
    when its hash matches, so a failed or wrong download leaves nothing behind.
    """
    import pooch
    import requests

    actions = []

    def record(fname: str, action: str, _pooch) -> str:
        actions.append(action)
        return fname

    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{digest}",
            fname=path.name,
            path=path.parent,
            processor=record,
            downloader=pooch.HTTPDownloader(timeout=DOWNLOAD_TIMEOUT),
            progressbar=False,
        )
    except requests.RequestException:
        raise  # an OSError: the server or the network, not the file
    except ValueError as error:  # pooch's hash mismatch
        raise DataError(f"{url}: downloaded file does not match its published sha256 {digest}") from error
    return actions != ["fetch"]


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Only warnings from ``logger`` while the block runs (pooch logs every download)."""
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def identical_response_ids(dataset: str, setting: str, directory: str | os.PathLike | None = None) -> frozenset[int]:
    """Instructions of a setting whose "irrelevant" response is the same text as the correct one.

    The irrelevant files splice in the response of another question; where the answers are
    yes/no or "Sentence A/B", about half of those are the very same answer. Such a pair is one
    input twice, not a correct and an irrelevant response, so the correct-vs-irrelevant
    comparisons leave it out. Empty when a file is missing or the setting has no pair.
    """
    pair = [f"{dataset}/{setting}/{responses}" for responses in RESPONSES]
    if not all(key in CONDITIONS for key in pair):
        return frozenset()
    paths = [data_dir(directory) / CONDITIONS[key].relative_path for key in pair]
    try:
        stamps = [(str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in paths]
    except OSError:
        return frozenset()
    try:
        return _identical_outputs(*stamps)
    except DataError:
        return frozenset()


@lru_cache(maxsize=64)
def _identical_outputs(correct: tuple, irrelevant: tuple) -> frozenset[int]:
    """Indices where two files' outputs are the same text; each file given as (path, mtime, size),
    so that a file changed on disk is read again (every run plans each dataset's files many times)."""
    a, b = load_records(correct[0]), load_records(irrelevant[0])
    return frozenset(i for i, (x, y) in enumerate(zip(a, b)) if x.output.strip() == y.output.strip())
