"""The page that places your own data among the study's reference settings, on one model.

It reads the user's file(s), the reference conditions and the scratch control (the same file
through a randomly initialised copy of the model) from a results store; every interval comes
from the book's bootstrap engine (``analysis.findings.bootstrap``), the placement from the reference
classifier of ``analysis.findings.closest_setting``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import data, profiles
from analysis.core import layer_stats, vocabulary
from analysis.core.formatting import fmt_interval
from analysis.core.registry import scratch_name
from analysis.data.records import load_records
from analysis.findings import closest_setting, metrics
from analysis.findings.bootstrap import (
    CurveDraws,
    Estimate,
    all_curve_draws,
    combine,
    pooled,
)
from analysis.report.load import ReportError, sampled
from analysis.report.notebook_parameters import DataParameters, validate_data
from analysis.store import ResultsStore

USER_SETTING = "your data"
STATS = layer_stats.your_data_statistics()  # nuclear norm, effective rank, the two cosine similarities
READ_COLUMNS = [
    "model",
    "dataset",
    "setting",
    "responses",
    "condition",
    "data_sha256",
    "sample_index",
    "layer",
    "proj",
    "n_layers",
    "n_response_tokens",
    "max_length",
    "template",
    *STATS,
]
SETTING_COLOURS = {"none": "#d95f02", "simplified": "#7570b3", "detailed": "#1b9e77"}
TOP_K = 10


def user_label(path: Path, taken: set[str]) -> str:
    """A short name for a user's file on the page: its stem, made unique and kept apart from the
    reference datasets (rows of one dataset are resampled together)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem) or "data"
    label, n = base, 2
    while label in taken:
        label, n = f"{base}-{n}", n + 1
    return label


@dataclass
class UserFile:
    """One of the user's files: where it is, its sha256 and the name the page gives it."""

    path: Path
    sha256: str
    label: str
    n_records: int

    @property
    def condition(self) -> str:
        return f"{self.label}/{USER_SETTING}/{vocabulary.CORRECT}"


def user_files(paths: Sequence[str], reference_datasets: Sequence[str]) -> list[UserFile]:
    """The user's files, validated (a DataError names the bad record) and labelled."""
    taken = set(reference_datasets) | {c.dataset for c in data.CONDITIONS.values()}
    found = []
    for spec in paths:
        resolved = data.resolve(str(spec))
        records = load_records(resolved.path)
        label = user_label(resolved.path, taken)
        taken.add(label)
        found.append(UserFile(resolved.path, resolved.sha256, label, len(records)))
    return found


def read_rows(params: DataParameters, files: Sequence[UserFile], references: Sequence[str]) -> pd.DataFrame:
    """Stored rows of the user's files (on the model and its scratch copy) and of the references
    (on the model), ``n_samples`` of each (``load.sampled``), user rows relabelled as ``<label>/your data/correct``."""
    results_dir, model, template = params.results_dir, params.model, params.template
    max_length, n_samples = params.max_length, params.n_samples
    root = Path(results_dir)
    if not (root / "store.json").is_file():
        raise ReportError(f"{root}: no results store here; run `python -m analysis profile-data` first")
    store = ResultsStore(root, create=False)
    filters = [
        ("model", "in", [model, scratch_name(model)]),
        ("template", "==", template),
        ("max_length", "==", int(max_length)),
    ]
    rows = store.read("rows", filters=filters, columns=READ_COLUMNS)
    if n_samples is not None and len(rows):
        rows = sampled(rows, n_samples)
    reference_rows = rows[(rows["model"] == model) & rows["condition"].isin(list(references))]
    pieces = [reference_rows]
    for file in files:
        mine = rows[(rows["condition"] == f"file:{file.path.stem}") & (rows["data_sha256"] == file.sha256)]
        pieces.append(
            mine.assign(
                dataset=file.label, setting=USER_SETTING, responses=vocabulary.CORRECT, condition=file.condition
            )
        )
    return pd.concat(pieces, ignore_index=True)


@dataclass
class YourData:
    """Everything the page shows, computed once."""

    model: str
    template: str
    files: list[UserFile]
    references: list[str]
    rows: pd.DataFrame
    draws: dict[str, CurveDraws]
    results_dir: Path
    n_samples: int | None
    placement: closest_setting.Placement | None = None
    placement_error: str | None = None
    assigned: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def scratch(self) -> str:
        return scratch_name(self.model)

    @classmethod
    def open(cls, notebook: str, given: dict | None = None) -> YourData:
        """The page of the parameters it was given (name -> value), checked by
        ``notebook_parameters.validate_data``: unknown names and values of the wrong kind stop it
        with one line naming the parameter. Every page opens so (``page.Page.open``); ``notebook`` is
        this page's (``notebook_parameters.YOUR_DATA``)."""
        return cls.read(validate_data(given or {}))

    @classmethod
    def read(cls, params: DataParameters) -> YourData:
        """Read the store and compute curves, intervals and the placement."""
        model = params.model
        references = (
            list(params.reference_conditions) if params.reference_conditions else reference_conditions_default()
        )
        files = user_files(params.data_files, sorted({r.split("/")[0] for r in references}))
        rows = read_rows(params, files, references)
        if not (rows["condition"].isin([f.condition for f in files]) & (rows["model"] == model)).any():
            raise ReportError(
                f"{params.results_dir}: no stored rows of {', '.join(str(f.path) for f in files)} on {model} "
                f"(template {params.template}, max_length {params.max_length}); run `python -m analysis profile-data`"
            )
        draws = all_curve_draws(
            rows, [model, scratch_name(model)], STATS, n_resamples=params.n_resamples, seed=params.seed
        )
        page = cls(model, params.template, files, references, rows, draws, Path(params.results_dir), params.n_samples)
        page._place(params.seed, params.n_resamples)
        return page

    def _place(self, seed: int, n_resamples: int) -> None:
        trained = self.rows[self.rows["model"] == self.model]
        reference = trained[trained["condition"].isin(self.references) & (trained["responses"] == vocabulary.CORRECT)]
        try:
            self.placement = closest_setting.fit_placement_on_rows(
                reference,
                label="setting",
                classes=[s for s in vocabulary.COT_SETTINGS],
                n_resamples=n_resamples,
                seed=seed,
            )
        except closest_setting.PlacementError as error:
            self.placement_error = str(error)
            return
        mine = trained[trained["setting"] == USER_SETTING]
        self.assigned = self.placement.assign(closest_setting.sample_features(mine))

    # ------------------------------------------------------------------ numbers

    def reference_groups(self) -> list[tuple[str, str]]:
        """(setting, responses) of the references, fast to slow thinking, correct first."""
        present = {
            (self.draws[self.model].conditions[c][1], self.draws[self.model].conditions[c][2])
            for c in self.references
            if c in self.draws[self.model].conditions
        }
        return sorted(present, key=lambda p: (vocabulary.RESPONSES.index(p[1]), vocabulary.setting_rank(p[0])))

    def reference_condition_list(self, setting: str, responses: str) -> list[str]:
        cd = self.draws[self.model]
        return [c for c in self.references if c in cd.conditions and cd.conditions[c][1:] == (setting, responses)]


def reference_conditions_default() -> list[str]:
    return list(profiles.reference_conditions())


# --------------------------------------------------------------------------- estimates


def condition_estimate(cd: CurveDraws, condition: str, stat: str, summary: str = "mean") -> Estimate | None:
    """A condition's mean (over projections and layers) or MAD (mean over projections of each
    projection's all-layer MAD) of ``stat``, with its bootstrap draws; projections where the
    statistic is undefined (a cosine of two shapes that differ) are left out."""
    keys = [(condition, p, stat) for p in vocabulary.PROJECTIONS if (condition, p, stat) in cd.estimate]
    if not keys or condition not in cd.conditions:
        return None
    dataset = cd.conditions[condition][0]
    n = min(cd.n_samples[k] for k in keys)
    if summary == "mean":
        value = np.nanmean([np.nanmean(cd.estimate[k]) for k in keys])
        draws = np.nanmean(np.stack([np.nanmean(cd.draws[k], axis=1) for k in keys]), axis=0)
    else:
        value = np.nanmean(
            [metrics.mean_absolute_difference(cd.estimate[k][np.isfinite(cd.estimate[k])]) for k in keys]
        )
        draws = np.nanmean(
            np.stack([metrics.mean_absolute_difference(cd.draws[k][:, np.isfinite(cd.estimate[k])]) for k in keys]),
            axis=0,
        )
    if not np.isfinite(value):
        return None
    return Estimate(float(value), np.asarray(draws, dtype=float), ((dataset, n),))


def _shown(estimate: Estimate | None) -> str:
    return "–" if estimate is None else fmt_interval(estimate.value, *estimate.interval())


def _group_estimate(page: YourData, setting: str, responses: str, stat: str, *, summary: str) -> Estimate | None:
    cd = page.draws[page.model]
    estimates = [condition_estimate(cd, c, stat, summary) for c in page.reference_condition_list(setting, responses)]
    return pooled([e for e in estimates if e is not None])


def level_table(page: YourData) -> pd.DataFrame:
    """Mean nuclear norm, MAD and mean effective rank with 95% intervals: the user's files on the
    model and its scratch copy, and each reference setting pooled over its datasets."""
    rows = []
    for model in (page.model, page.scratch):
        cd = page.draws.get(model)
        for file in page.files:
            if cd is None or file.condition not in cd.conditions:
                continue
            kind = "your data" if model == page.model else "your data, scratch model"
            rows.append(
                _level_row(
                    kind,
                    file.label,
                    model,
                    lambda s, m, cd=cd, c=file.condition: condition_estimate(cd, c, s, m),
                    n=cd.count(file.condition),
                )
            )
    for setting, responses in page.reference_groups():
        conditions = page.reference_condition_list(setting, responses)
        n = sum(page.draws[page.model].count(c) for c in conditions)
        rows.append(
            _level_row(
                "reference",
                f"{vocabulary.setting_label(setting)} ({responses})",
                page.model,
                lambda s, m, a=setting, b=responses: _group_estimate(page, a, b, s, summary=m),
                n=n,
                datasets=", ".join(sorted({c.split("/")[0] for c in conditions})),
            )
        )
    return pd.DataFrame(rows)


def _level_row(kind: str, name: str, model: str, estimate, *, n: int, datasets: str = "") -> dict:
    return {
        "data": kind,
        "name": name,
        "datasets": datasets,
        "model": model,
        "n": n,
        "mean nuclear norm": _shown(estimate("nuclear_norm", "mean")),
        "MAD of nuclear norm": _shown(estimate("nuclear_norm", "mad")),
        "mean effective rank": _shown(estimate("effective_rank", "mean")),
        "mean cosine, same layer": _shown(estimate("cos_same_layer", "mean")),
        "mean cosine, next layer": _shown(estimate("cos_next_layer", "mean")),
    }


# --------------------------------------------------------------------------- texts


def quality_text(page: YourData) -> str:
    """The follow-up study's statement about data quality, with the user's numbers beside the references'."""
    cd = page.draws[page.model]
    lines = [
        (
            "The follow-up study (Li et al. 2025, arXiv 2504.10766, code MingLiiii/Gradient_Unified) reports that "
            "higher-quality instruction data give **lower nuclear norms and higher effective ranks**, and that the "
            f"cosine similarities between gradients do **not** track quality. Here, on {page.model}:"
        )
    ]
    items = []
    for file in page.files:
        numbers = [_shown(condition_estimate(cd, file.condition, stat)) for stat in STATS]
        items.append(f"- **{file.label}**: " + _quality_numbers(numbers))
    for setting, responses in page.reference_groups():
        numbers = [_shown(_group_estimate(page, setting, responses, stat, summary="mean")) for stat in STATS]
        items.append(f"- {vocabulary.setting_label(setting)} ({responses}): " + _quality_numbers(numbers))
    lines.append("\n".join(items))
    lines.append(
        "The settings differ in response length as well as in content, and the follow-up's comparisons "
        "hold the task fixed: read lower nuclear norms and higher effective ranks as *more like the "
        "slow-thinking, higher-quality references*, not as a quality score on their own. The per-sample "
        "ranking below orders your samples by the same measure."
    )
    return "\n\n".join(lines)


def _quality_numbers(numbers: Sequence[str]) -> str:
    nuclear, rank, same, following = numbers
    return (
        f"mean nuclear norm {nuclear}, mean effective rank {rank}; mean cosine similarity {same} within a layer, "
        f"{following} between adjacent layers."
    )


def scratch_text(page: YourData) -> str:
    """How far the trained model's profile of each file is from the scratch copy's."""
    if page.scratch not in page.draws:
        return "The scratch control is not stored; run `python -m analysis profile-data` again to compute it."
    lines = (_scratch_line(page, file) for file in page.files)
    return "\n\n".join(line for line in lines if line)


def _scratch_line(page: YourData, file) -> str | None:
    """One file's nuclear norm and effective rank on the trained model and the scratch copy (None: not stored)."""
    trained = condition_estimate(page.draws[page.model], file.condition, "nuclear_norm")
    scratch = condition_estimate(page.draws[page.scratch], file.condition, "nuclear_norm")
    if trained is None or scratch is None:
        return None
    ratio = combine(lambda a, b: a / b, trained, scratch)
    rank_t = condition_estimate(page.draws[page.model], file.condition, "effective_rank")
    rank_s = condition_estimate(page.draws[page.scratch], file.condition, "effective_rank")
    return (
        f"**{file.label}**: mean nuclear norm {_shown(trained)} on the trained model and {_shown(scratch)} "
        f"on the scratch copy (ratio {_shown(ratio)}); mean effective rank {_shown(rank_t)} vs {_shown(rank_s)}."
    )


def coverage_text(page: YourData) -> str:
    """Markdown: samples behind each part of the page."""
    cd = page.draws[page.model]
    parts = []
    for file in page.files:
        n = cd.count(file.condition) if file.condition in cd.conditions else 0
        parts.append(
            f"**{file.label}** (`{file.path.name}`, {file.n_records} records, sha256 {file.sha256[:12]}): "
            f"{n} samples on {page.model}"
        )
    counts = [cd.count(c) for c in page.references if c in cd.conditions]
    parts.append(
        f"{len(counts)} of {len(page.references)} reference conditions stored with "
        f"{min(counts, default=0)} to {max(counts, default=0)} samples each"
    )
    return "; ".join(parts) + ". Intervals are 95% intervals over instructions (the book's bootstrap engine)."
