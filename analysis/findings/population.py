"""Whom the sampled instructions represent: the answers of the instructions a profile draws from.

A profile that samples the files draws every setting's instructions from those whose None-CoT
irrelevant answer differs from the correct one (``sample_draws.dataset_sample_ids``), so F3's None-CoT
comparison has the profile's n. That changes the population of every other check too: where the
answers are yes/no or "Sentence A/B", about half of the instructions are passed over, and which
ones depends on the answer the spliced-in response happens to carry. ``population_text`` says
how many instructions of each answer are kept, from the data files themselves.
"""

from __future__ import annotations

import os
from collections import Counter

from analysis import data
from analysis.core import vocabulary
from analysis.data import data_files
from analysis.data.records import load_records

NAMES = {"aqua": "AQuA", "gsm8k": "GSM8K", "strategyqa": "StrategyQA", "ecqa": "ECQA", "creak": "CREAK"}
FEWEST_SHOWN = 5  # answers listed one by one only for datasets with at most this many distinct answers


def answer_counts(dataset: str, directory: str | os.PathLike | None = None) -> tuple[Counter, Counter] | None:
    """(answers of every instruction, answers of those a sampling profile draws from) of a dataset's
    None-CoT correct file; None without None-CoT files."""
    key = f"{dataset}/none/correct"
    if key not in data.CONDITIONS:
        return None
    records = load_records(data_files.data_dir(directory) / data.CONDITIONS[key].relative_path)
    identical = data.identical_response_ids(dataset, "none", directory)
    every = Counter(r.output.strip() for r in records)
    kept = Counter(r.output.strip() for i, r in enumerate(records) if i not in identical)
    return every, kept


def population_text(directory: str | os.PathLike | None = None) -> str:
    """One sentence per dataset with identical None-CoT pairs: how many of its instructions, and of
    each answer, a sampling profile draws from."""
    pieces = []
    for dataset in vocabulary.REASONING_DATASETS:
        counts = answer_counts(dataset, directory)
        if counts is None or sum(counts[0].values()) == sum(counts[1].values()):
            continue
        every, kept = counts
        text = (
            f"{NAMES.get(dataset, dataset.capitalize())} {sum(kept.values())} of its {sum(every.values())} instructions"
        )
        if len(every) <= FEWEST_SHOWN:
            answers = sorted(every, key=lambda a: (-every[a], a))
            text += " (" + ", ".join(f'"{a}" {kept[a]} of {every[a]}' for a in answers) + ")"
        pieces.append(text)
    return "; ".join(pieces) + "."
