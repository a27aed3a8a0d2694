"""What a per-model check reads on one dataset, as one typed value (``DatasetContext``).

A per-model parts function (``scopes.ModelParts``) takes one ``DatasetContext`` and nothing else:
the model's bootstrap curves (with their token counts and the loss screen's pairs,
``bootstrap.CurveDraws``), the dataset, and the per-dataset inputs beside the curves. A new input
that a check reads is one more field here, filled once where the context is made
(``scopes.Inputs.context``), not a keyword threaded through every parts function.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.findings.bootstrap import CurveDraws


@dataclass(frozen=True, kw_only=True)
class DatasetContext:
    """One model's curves on one reasoning dataset, with what the checks read beside them.

    ``identical``: the dataset's None-CoT instructions whose irrelevant answer is the same text as
    the correct one (left out of correct-vs-irrelevant comparisons, ``data.identical_response_ids``);
    ``data_dir``: the data the curves' instructions come from, where a check reads more of them
    (e.g. which chains state their answer word for word, ``data.verbatim_answer_ids``; None: the
    curves come with no data, as a simulation's); ``store``: the results store the curves were read
    from, named in the commands that add what it lacks (None: not known).
    """

    curves: CurveDraws
    dataset: str
    identical: frozenset[int] = frozenset()
    data_dir: str | None = None
    store: str | None = None
