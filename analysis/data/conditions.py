"""The study's 56 data files as conditions, and the views of them: length-controlled and answer-scored.

A condition is (dataset, setting, responses): e.g. ``aqua/detailed/correct`` is the AQuA file
with GPT-4o chains of thought and correct responses. Where the files are, their sha256 and their
download are in :mod:`analysis.data.data_files`; how a file's records are read and validated in
:mod:`analysis.data.records`; the seeded sample a run takes of them in :mod:`analysis.data.sample_draws`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from analysis.core.vocabulary import (
    ANSWER_PHRASE,
    ANSWER_SETTINGS,
    CORRECT,
    COT_SETTINGS,
    LENGTH_CONTROL_SETTINGS,
    LOSS_MATCHED_SETTINGS,
    MATH_REASONING,
    REASONING_DATASETS,
    RESPONSES,
    SCORED_SUBSET_SETTINGS,
)
from analysis.data.data_errors import DataError
from analysis.data.data_files import DATA_ENV, data_dir, expected_sha256, file_sha256
from analysis.data.records import RECORD_SUFFIXES, Record, load_records

MATH_DATASETS = {"math-algebra": "algebra", "math-counting": "counting_probability", "math-geometry": "geometry"}
_COT_SUFFIX = {"none": "no_cot", "simplified": "with_cot", "detailed": "with_cot_gpt4o"}
_WIKI_STEM = {
    "len100": "popular_wikipedia_100",
    "len500": "popular_wikipedia_500",
    "len1000": "popular_wikipedia_1000",
    "unpopular": "long_tail_wikipedia",
}


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
    condition whose scored token count (an answer-scored view's: its answer's tokens) is how many of
    this one's response tokens its loss scores, a seeded random subset of them (the text itself is
    whole); set only for the scored-subset settings. ``answer`` says how an answer-scored condition builds its responses (``AnswerView``);
    set only for those. ``loss_matched``: a scored-subset condition that reads its reference's own
    text (the Detailed CoT, the phrase and the answer) and draws its tokens among the chain's, each
    matched in loss to one answer token (``analysis.extract.loss_matching``); set only for the
    loss-matched settings.
    """

    dataset: str
    setting: str
    responses: str
    relative_path: str
    length_reference: str | None = None
    answer: AnswerView | None = None
    scored_reference: str | None = None
    loss_matched: bool = False

    @property
    def is_view(self) -> bool:
        """Whether the condition is a view of the study's files rather than one of the 56 files."""
        return self.length_reference is not None or self.answer is not None or self.scored_reference is not None

    @property
    def token_reference(self) -> str | None:
        """The condition whose scored token counts this one's responses follow (a length control's
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
    None-CoT file: as many scored tokens as the reference scores (``detailed_answer``: the answer after
    the Detailed CoT and the phrase), on the Detailed CoT's own text (``SCORED_SUBSET_SETTINGS``) or on
    the reference's, among its chain tokens matched in loss to its answer's (``LOSS_MATCHED_SETTINGS``)."""
    out = []
    views = [(setting, reference, False) for setting, reference in SCORED_SUBSET_SETTINGS.items()]
    views += [(setting, reference, True) for setting, reference in LOSS_MATCHED_SETTINGS.items()]
    for condition in list(registry.values()):
        if condition.setting != "detailed" or condition.responses != CORRECT or condition.is_view:
            continue
        for setting, reference, matched in views:
            reference_key = f"{condition.dataset}/{reference}/{CORRECT}"
            if reference_key in registry:
                out.append(
                    Condition(
                        condition.dataset,
                        setting,
                        CORRECT,
                        condition.relative_path,
                        scored_reference=reference_key,
                        loss_matched=matched,
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


def condition_records(condition: Condition, path: Path, directory: str | os.PathLike | None = None) -> list[Record]:
    """The records of a condition: those of its file at ``path``, or for an answer-scored view the
    responses it builds (``answer_records``), for a loss-matched view those of its reference."""
    if condition.loss_matched and condition.scored_reference is not None:
        return answer_records(CONDITIONS[condition.scored_reference], directory)
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


CHAIN_ENDING = "\n" + ANSWER_PHRASE  # what an answer-scored view puts between its context and the answer


def chain_end(record: Record, *, where: str) -> int:
    """Where the chain ends in the response of an answer-scored record built on a context (before
    the new line and the phrase that precede its answer); a DataError naming ``where`` (file and
    record) if the response does not hold them there."""
    start = record.answer_start
    end = -1 if start is None else start - len(CHAIN_ENDING)
    if start is None or end < 0 or record.output[end:start] != CHAIN_ENDING:
        raise DataError(f"{where}: the response does not hold {CHAIN_ENDING!r} right before its answer")
    return end


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


def verbatim_answer_ids(dataset: str, directory: str | os.PathLike | None = None) -> frozenset[int]:
    """Instructions whose Detailed CoT (correct responses) states their None-CoT answer word for word
    (case-insensitive): where the answer-scored conditions append an answer the chain itself gives,
    rather than a label it never wrote ("no", "pantry"). Empty when a file is missing."""
    pair = [f"{dataset}/{setting}/{CORRECT}" for setting in ("none", "detailed")]
    if not all(key in CONDITIONS for key in pair):
        return frozenset()
    paths = [data_dir(directory) / CONDITIONS[key].relative_path for key in pair]
    try:
        stamps = [(str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in paths]
        return _verbatim(*stamps)
    except (OSError, DataError):
        return frozenset()


@lru_cache(maxsize=64)
def _verbatim(answers: tuple, chains: tuple) -> frozenset[int]:
    """Indices where the chain's text holds the answer's as a whole word or phrase, case-insensitive
    ("no" in "... so the answer is no.", not in "not"; files as in ``_identical_outputs``)."""
    a, b = load_records(answers[0]), load_records(chains[0])
    return frozenset(i for i, (answer, chain) in enumerate(zip(a, b)) if states(chain.output, answer.output))


def states(text: str, answer: str) -> bool:
    """Whether ``text`` holds ``answer`` (stripped) as a whole word or phrase, case-insensitive."""
    answer = answer.strip()
    if not answer:
        return False
    return re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text, flags=re.IGNORECASE) is not None
