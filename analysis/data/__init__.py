"""The study's data: the conditions and the data files behind them, each located and checked.

Modules:

- ``conditions``: the study's conditions: the 56 data files, their length-controlled, answer-scored,
  scored-subset and loss-matched views, each located and checked
- ``records``: the records of a data file (the study's or chat records, JSON or JSON Lines, your own files
  too), validated
- ``data_files``: where the data files are, their published sha256, and their download
- ``data_errors``: the data's error (``DataError``): a data file, a record or a condition key the study cannot
  use
- ``sample_draws``: the samples a run draws per condition: the seeded draw (``dataset_sample_ids``), kept
  beside the store and read back by the pages

The conditions' names are the package's own (``analysis.data.get_condition``), as most callers read them.
"""

from analysis.data.conditions import (
    CONDITIONS,
    AnswerView,
    Condition,
    ResolvedData,
    answer_records,
    chain_end,
    condition_records,
    conditions_matching,
    data_dir,
    get_condition,
    identical_response_ids,
    resolve,
    shuffled_words,
    states,
    study_conditions,
    verbatim_answer_ids,
)

__all__ = [
    "CONDITIONS",
    "AnswerView",
    "Condition",
    "ResolvedData",
    "answer_records",
    "chain_end",
    "condition_records",
    "conditions_matching",
    "data_dir",
    "get_condition",
    "identical_response_ids",
    "resolve",
    "shuffled_words",
    "states",
    "study_conditions",
    "verbatim_answer_ids",
]
