"""The page "During training": its data, figures, verdicts and their error rates.

Everything shown comes from the results directory of a training profile's run: the probe rows of
the checkpoints (the results store), the runs' losses and weight changes (``analysis.train.run_tables``),
the settings from the run log. The verdicts are those of the registered checks this chapter shows
(``checks.on_chapter``), run by ``checks.run_checks`` on the training runs and shown as every page's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysis import checks
from analysis.core import vocabulary
from analysis.core.errors import StudyError
from analysis.core.settings import TrainingSettings
from analysis.core.vocabulary import PROJECTIONS
from analysis.findings import calibration, training_checks
from analysis.findings.calibration import training_calibration
from analysis.findings.rules import Finding
from analysis.findings.scopes import Scope
from analysis.profiles import Profile
from analysis.report import notebook_parameters, plots, sections, verdicts
from analysis.report.blocks import Blocks, Markdown, Table, fold
from analysis.store import ResultsStore
from analysis.train import run_tables

PROBE_COLUMNS = ["model", "dataset", "setting", "responses", "sample_index", "layer", "proj", "nuclear_norm"]
CHAPTER = "during_training"
ARM_LABELS = {"none": "None CoT", "detailed": "Detailed CoT", "detailed_cut_none": "Detailed cut to None length"}


class TrainingPageError(StudyError, ValueError):
    """A results directory without the training runs the page shows."""


@dataclass
class TrainingPage:
    """The training runs of one results directory."""

    profile: Profile
    results_dir: Path
    probes: pd.DataFrame  # store rows of the checkpoints, with base_model, run, step, arm, seed
    losses: pd.DataFrame
    change: pd.DataFrame
    _found: list[Finding] | None = None

    @classmethod
    def open(cls, notebook: str, given: dict | None = None) -> TrainingPage:
        """The page for the parameters its notebook was given (``profile``, ``results_dir``, and
        ``data_dir``, which it does not read), checked like every page's (``notebook_parameters``);
        an unknown name or a wrong value stops it with one line naming it. Every page opens so
        (``page.Page.open``)."""
        return cls.read(notebook_parameters.validate(notebook, given))

    @classmethod
    def read(cls, params: notebook_parameters.NotebookParameters) -> TrainingPage:
        """The page of a training profile's run (its settings from the run log)."""
        chosen, results, profile = params.profile, params.results_dir, params.profile.name
        if chosen.source != "training" or chosen.training is None:
            raise TrainingPageError(f"profile {profile!r} is not a training profile; run make book PROFILE=training")
        store = ResultsStore(results, create=False)
        rows = store.read("rows", filters=[("model", "in", _probe_models(store))], columns=PROBE_COLUMNS)
        probes = training_checks.with_run_columns(rows)
        losses, change = (
            run_tables.read_table(results, run_tables.LOSSES),
            run_tables.read_table(results, run_tables.WEIGHT_CHANGE),
        )
        if probes.empty or losses.empty or change.empty:
            raise TrainingPageError(
                f"{results}: no training runs stored; run python -m analysis run --profile {profile}"
            )
        return cls(chosen, results, probes, losses, change)

    @property
    def training_settings(self) -> TrainingSettings:
        """The profile's training settings (``read`` opens only a training profile)."""
        assert self.profile.training is not None, "a training page's profile is a training profile"
        return self.profile.training

    @property
    def last_step(self) -> int:
        """The last step every run reached."""
        return int(self.change.groupby(["model", "run"])["step"].max().min())

    def setup(self) -> str:
        """The settings of the runs, as the run log recorded them."""
        s = self.training_settings
        runs = self.losses.groupby("model")["run"].nunique().to_dict()
        return (
            f"Models: {', '.join(f'{m} ({n} runs)' for m, n in runs.items())}. Data: {s.dataset}, "
            f"{s.responses} responses; arms: {', '.join(ARM_LABELS.get(a, a) for a in s.arms)}; seeds "
            f"{', '.join(map(str, s.seeds))}. AdamW, learning rate {s.learning_rate:g}, weight decay "
            f"{s.weight_decay:g}, {s.steps} steps of {s.batch_size} samples from {s.n_train} instructions that each seed "
            f"draws from those that are not probes (the arms of a seed share them), every weight trained; samples cut at {self.profile.extraction.max_length} tokens. Probes: "
            f"{s.n_probes} held-out instructions under {', '.join(s.probe_settings)} at steps "
            f"{', '.join(str(k) for k in sorted(self.change['step'].unique()))}."
        )

    registry: checks.Registry = checks.REGISTRY

    @property
    def pairs(self) -> dict[str, str]:
        return {}  # no base-instruct pairs: the runs are of one model each

    @property
    def imported(self) -> bool:
        return False

    @property
    def empty(self) -> bool:
        return self.probes.empty

    def checks(self, scope: Scope | None = None) -> tuple[str, ...]:
        """The checks this chapter shows (of one scope, if given)."""
        return checks.on_chapter(CHAPTER, scope, self.registry)

    def findings(self, shown=None) -> list[Finding]:
        """The findings of the chapter's checks on these runs, at the last step every run reached, computed once."""
        if self._found is None:
            runs = training_checks.TrainingRuns(
                self.probes, self.change, self.last_step, self.profile.n_resamples, self.profile.seed
            )
            self._found = checks.run_checks({}, self.checks(), extra={training_checks.TRAINING_RUNS: runs})
        return [f for f in self._found if shown is None or f.check in shown]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.losses["model"]))

    @property
    def n_samples(self) -> int | None:
        return self.profile.training.n_probes if self.profile.training else None

    def note(self) -> str | None:
        return None

    def reported(self) -> pd.DataFrame:
        return pd.DataFrame()

    def scope(self) -> str:
        """The summary's scope: what was trained, on which arms and seeds, and where the verdicts are read."""
        s = self.training_settings
        return (
            f"**Scope.** The questions {', '.join(self.checks())} beyond the paper: {', '.join(self.models)} "
            f"fine-tuned on {s.dataset} under {len(s.arms)} arms x {len(s.seeds)} seeds, {s.steps} steps; "
            f"{s.n_probes} probe instructions per setting, at the last step every run reached ({self.last_step})."
        )


def _probe_models(store: ResultsStore) -> list[str]:
    return sorted(m for m in store.distinct("model") if training_checks.is_probe_model(m))


def verdicts_section(page: TrainingPage) -> Blocks:
    """The verdict matrix of the chapter's checks as every page's, how many "holds" chance alone
    would give, and the verdicts with their numbers (folded)."""
    found = page.findings()
    if not found:
        return []
    return [
        *sections.verdict_matrix(page, page.checks()),
        Markdown(f"*{verdicts.false_holds_note(found)}*"),
        fold("The verdicts with their numbers", [Table(verdicts.findings_frame(found))]),
    ]


def probe_curves(page: TrainingPage) -> list[tuple[str, Figure]]:
    """Per model: the probes' mean nuclear norm per layer (geometric mean over instructions, seeds
    and q, k, v, o), one panel per arm and probe setting, one line per checkpoint step."""
    figures = []
    for model, rows in page.probes.groupby("base_model"):
        arms, settings = sorted(rows["arm"].unique()), list(page.training_settings.probe_settings)
        fig, axes = plt.subplots(
            len(arms), len(settings), figsize=(plots.GRID_PANEL[0] * len(settings), 2.4 * len(arms)), squeeze=False
        )
        colors = plt.cm.viridis(np.linspace(0, 0.9, rows["step"].nunique()))
        for i, arm in enumerate(arms):
            for j, setting in enumerate(settings):
                ax = axes[i, j]
                chosen = rows[(rows["arm"] == arm) & (rows["setting"] == setting)]
                curves = chosen.assign(log=np.log(chosen["nuclear_norm"])).groupby(["step", "layer"])["log"].mean()
                for color, (step, curve) in zip(colors, curves.groupby(level="step")):
                    ax.plot(
                        curve.index.get_level_values("layer"),
                        np.exp(curve.to_numpy()),
                        color=color,
                        label=f"step {step}",
                    )
                ax.set_yscale("log")
                ax.set_title(
                    f"trained on {ARM_LABELS.get(arm, arm)}\nprobe {vocabulary.setting_label(setting)}", fontsize=8
                )
                ax.set_xlabel("layer", fontsize=8)
        axes[0, -1].legend(fontsize=8)
        axes[0, 0].set_ylabel("nuclear norm (geometric mean)", fontsize=8)
        fig.tight_layout()
        figures.append((f"{model}: probe gradients across training", fig))
    return figures


def weight_change(page: TrainingPage) -> list[tuple[str, Figure]]:
    """Per model: the nuclear norm of ``W_K - W_0`` per layer at the last step, one panel per
    projection, one line per arm (geometric mean over seeds)."""
    step = page.last_step
    return [
        (f"{model}: weight change per layer after {step} steps", fig)
        for model, fig in _arm_panels(page, "nuclear_norm", f"||W_{step} - W_0||_*", shade_seeds=False)
    ]


def relative_change(page: TrainingPage) -> list[tuple[str, Figure]]:
    """Per model: the relative change ``||W_K - W_0||_F / ||W_0||_F`` per layer at the last step, one
    panel per projection, one line per arm (geometric mean over seeds, each seed's range shaded)."""
    if "relative_frobenius" not in page.change:
        raise TrainingPageError(
            f"{page.results_dir}: the weight-change tables have no relative change; train the runs again"
        )
    step = page.last_step
    return [
        (f"{model}: relative weight change per layer after {step} steps", fig)
        for model, fig in _arm_panels(page, "relative_frobenius", f"||W_{step} - W_0||_F / ||W_0||_F", shade_seeds=True)
    ]


def _arm_panels(page: TrainingPage, column: str, title: str, shade_seeds: bool) -> list[tuple[str, Figure]]:
    """Per model, at the last step: one panel per projection, one line per arm, the geometric mean
    over seeds of ``column`` per layer (on a log axis with each seed's range shaded, if asked)."""
    figures = []
    for model, rows in page.change[page.change["step"] == page.last_step].groupby("model"):
        grid = plots.panel_rows(len(PROJECTIONS))
        fig, axes = plt.subplots(*grid, figsize=plots.panels_size(*grid, height=2.6), squeeze=False)
        for ax, proj in zip(axes.flat, PROJECTIONS):
            chosen = rows[rows["proj"] == proj]
            for arm, arm_rows in chosen.groupby("arm"):
                logs = np.log(arm_rows[column]).groupby(arm_rows["layer"])
                (line,) = ax.plot(logs.mean().index, np.exp(logs.mean().to_numpy()), label=ARM_LABELS.get(arm, arm))
                if shade_seeds:
                    ax.fill_between(
                        logs.mean().index, np.exp(logs.min()), np.exp(logs.max()), color=line.get_color(), alpha=0.15
                    )
            if shade_seeds:
                ax.set_yscale("log")
            ax.set_title(f"{proj.upper()}: {title}", fontsize=9)
            ax.set_xlabel("layer", fontsize=8)
        axes[0, 0].legend(fontsize=8)
        fig.tight_layout()
        figures.append((model, fig))
    return figures


def relative_change_table(page: TrainingPage) -> pd.DataFrame:
    """Per model and arm: the relative change of the attention projections at the last step
    (geometric mean over layers and projections; its smallest and largest seed)."""
    rows = page.change[page.change["step"] == page.last_step]
    if "relative_frobenius" not in rows:
        return pd.DataFrame()
    per_seed = rows.assign(log=np.log(rows["relative_frobenius"])).groupby(["model", "arm", "seed"])["log"].mean()
    table = per_seed.groupby(["model", "arm"]).agg(["mean", "min", "max"]).apply(np.exp).reset_index()
    table["arm"] = table["arm"].map(lambda a: ARM_LABELS.get(a, a))
    return table.rename(
        columns={"mean": "relative change (geometric mean)", "min": "smallest seed", "max": "largest seed"}
    )


def loss_curves(page: TrainingPage) -> list[tuple[str, Figure]]:
    """Per model: the training loss of every step, one line per run, colored by arm."""
    figures = []
    for model, rows in page.losses.groupby("model"):
        fig, ax = plt.subplots(figsize=(6, 3))
        colors = dict(zip(sorted(rows["arm"].unique()), plt.color_sequences["tab10"]))
        for (arm, seed), run in rows.groupby(["arm", "seed"]):
            ax.plot(run["step"], run["loss"], color=colors[arm], label=f"{ARM_LABELS.get(arm, arm)}, seed {seed}")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (response tokens)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        figures.append((f"{model}: training loss", fig))
    return figures


def error_rates(page: TrainingPage, reps: int = 200) -> pd.DataFrame:
    """Share of false "holds" of the rules of the chapter's checks (``training_calibration.RULES``)
    in each null scenario of ``training_calibration`` (a training-set effect among them), simulated
    in this run's design (probes, seeds, layers) by the functions the checks call, with the checks
    each rule stands for (``calibration.checks_by_rule``)."""
    s = page.training_settings
    design = training_calibration.TrainingDesign(s.n_probes, len(s.seeds), int(page.change["layer"].max()) + 1)
    table = training_calibration.false_holds_by_scenario(
        design, reps, n_resamples=200, seed=page.profile.seed, checks_of=calibration.checks_by_rule(checks.REGISTRY)
    )
    return table[["rule", "checks", "scenario", "runs' design", "instructions", "reps", "holds when false"]]
