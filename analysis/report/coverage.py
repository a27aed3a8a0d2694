"""What a page's numbers cover, in sentences true for where they come from, and the command that
brings what is absent.

A run's numbers are either computed here (``run``/``extract``: a seeded random sample of N
instructions per file) or the original study's released statistics (``import-original``: whatever
its files hold). Coverage counts only the run's models found in the store; a model, family,
setting or response type with no rows gets one sentence naming it and the exact command that
would bring it: ``import-original`` with ``--models`` and ``--conditions`` filled in for imported
numbers, ``run --profile`` for computed ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis import data, profiles
from analysis.core import registry, vocabulary
from analysis.data import sample_draws
from analysis.profiles import Profile
from analysis.report.load import StudyResults
from analysis.store import runlog

HUB_SOURCE = "hf://datasets/MingLiiii/Layer_Gradient"
LISTED = 12  # conditions named one by one before "and N more"


def imported_profile(profile) -> bool:
    """Whether a run's numbers are the original study's released statistics (nothing computed)."""
    return getattr(profile, "source", "extract") == "imported"


def imported_source(results_dir) -> str:
    """The source of the latest import into ``results_dir`` (the run log), else the hub dataset."""
    path = Path(results_dir)
    runs = runlog.read(path) if path.is_dir() else []
    sources = [r.profile.get("source") for r in runs if r.profile.get("name") == "import-original"]
    return next((s for s in reversed(sources) if s), HUB_SOURCE)


def _shown_path(path) -> str:
    """A results path as a reader types it: relative to the working directory when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def bring_command(profile, results_dir, models: Sequence[str], conditions: Sequence[str]) -> str:
    """The exact command that stores ``models`` x ``conditions`` in ``results_dir`` for this run."""
    exported = Path(results_dir).suffix == ".parquet"  # a downloaded file: the command fills a store
    out = str(Path("results") / profile.name) if exported else _shown_path(results_dir)
    if imported_profile(profile):
        folders = [(info.original_folder if (info := registry.known_model(m)) else None) or m for m in models]
        return (
            f"python -m analysis import-original {imported_source(results_dir)} --out {out} "
            f"--models {' '.join(folders)} --conditions {' '.join(conditions)}"
        )
    default = Path("results") / profile.name
    results = "" if Path(out) == default else f" --results-dir {out}"
    return f"python -m analysis run --profile {profile.name}{results}"


def describe_conditions(missing: Sequence[str], page: Sequence[str]) -> str:
    """The conditions ``missing`` of a page's ``page`` conditions, named by what they share: a family,
    a dataset, a setting or a response type where all of the page's conditions of it are missing."""
    if set(page) <= set(missing):
        return f"all {len(page)} conditions of this page"
    left = [c for c in page if c in set(missing)]
    named = []
    by = {
        "family": lambda c: vocabulary.FAMILY_LABELS.get(c.family, c.family),
        "dataset": lambda c: c.dataset,
        "setting": lambda c: vocabulary.setting_label(c.setting),
        "responses": lambda c: f"{c.responses} responses",
    }
    for label in by.values():
        groups: dict[str, list[str]] = {}
        for key in page:
            groups.setdefault(label(data.get_condition(key)), []).append(key)
        for name, keys in groups.items():
            if len(keys) > 1 and set(keys) <= set(left):
                named.append(f"{name} ({len(keys)} conditions)")
                left = [c for c in left if c not in keys]
    shown = left[:LISTED]
    more = f" and {len(left) - LISTED} more" if len(left) > LISTED else ""
    return ", ".join(named + shown) + more


def missing_pairs(results: StudyResults, requested: Sequence[str]) -> dict[str, list[str]]:
    """Per requested model, the page's conditions with no stored (nor skipped) sample."""
    cov = results.coverage
    held = cov[(cov["stored"] + cov["skipped"]) > 0]
    have = set(zip(held["model"], held["condition"]))
    out = {}
    for model in requested:
        absent = [c for c in results.conditions if (model, c) not in have]
        if absent:
            out[model] = absent
    return out


def absent_sentence(results: StudyResults, profile, results_dir, requested: Sequence[str]) -> str:
    """One paragraph: what the run asked for that the store lacks on this page, and the command."""
    missing = missing_pairs(results, requested)
    if not missing:
        return ""
    groups: dict[tuple[str, ...], list[str]] = {}
    for model, conditions in missing.items():
        groups.setdefault(tuple(conditions), []).append(model)
    pieces = [f"{', '.join(models)}: {describe_conditions(c, results.conditions)}" for c, models in groups.items()]
    conditions = [c for c in results.conditions if any(c in cs for cs in missing.values())]
    command = bring_command(profile, results_dir, list(missing), conditions)
    verb = "Import them with" if imported_profile(profile) else "Compute them with"
    head = "**Nothing stored for this page.**" if results.rows.empty else "**Not stored:**"
    return f"{head} {'; '.join(pieces)}. {verb} `{command}`; everything on this page uses only what is stored."


def _per_file(counts: pd.Series) -> str:
    """'N samples per file', or the most common N and the files that differ."""
    common = int(counts.mode().iloc[0])
    differ = counts[counts != common]
    text = f"{common} samples per file"
    if len(differ):
        listed = ", ".join(f"{n} in {m} {c}" for (m, c), n in differ.head(LISTED).items())
        more = f" and {len(differ) - LISTED} more" if len(differ) > LISTED else ""
        text += f" ({listed}{more})"
    return text


def sample_sentence(results: StudyResults, profile) -> str:
    """Where the samples come from: the original study's files as released, or a seeded random sample."""
    if imported_profile(profile):
        cov = results.coverage
        held = cov[(cov["stored"] + cov["skipped"]) > 0].set_index(["model", "condition"])
        if held.empty:
            return ""
        counts = held["stored"] + held["skipped"]
        return f"The samples are the original study's files: {_per_file(counts)}, as released."
    if results.n_samples is None:
        return "Every record of each file is a sample."
    return (
        f"The {results.n_samples} instructions per dataset are a random sample of its file (seed {sample_draws.SAMPLE_SEED}), "
        "the same instructions under every setting, for correct and irrelevant responses, and on every model; "
        "not the file's first records."
    )


def profile_for(chapter: str, profile) -> Profile | None:
    """A project profile whose conditions include ``chapter``'s, for ``profile``'s models and origin
    (``<name>-full`` first, then the profile of the same name, then the others), else None."""
    names = [f"{profile.name}-full", profile.name, *profiles.PROFILES]
    for name in dict.fromkeys(names):
        other = profiles.PROFILES.get(name)
        if (
            other is not None
            and other.conditions_for(chapter)
            and getattr(other, "source", "extract") == getattr(profile, "source", "extract")
            and set(profile.models) <= set(other.models)
        ):
            return other
    return None


def no_conditions_sentence(chapter: str, profile, results_dir) -> str:
    """One sentence for a page whose profile computes none of its conditions, with the command that would."""
    title = chapter.replace("_", " ").capitalize()
    head = f"**The `{profile.name}` profile computes no condition of this chapter ({title}).**"
    other = profile_for(chapter, profile)
    if other is None:
        return f"{head} No profile of the project computes them for its models."
    out = results_dir if other.name == profile.name else Path("results") / other.name  # the other profile's book
    command = bring_command(other, out, profile.models, other.conditions_for(chapter))
    return f"{head} `{command}` would."


def coverage_text(
    results: StudyResults, profile, results_dir, requested: Sequence[str], *, chapter: str | None = None
) -> str:
    """Markdown: the run's models found, the pairs they hold, where the samples come from, what is
    absent (with the command) and what was skipped; on a page (``chapter``) whose profile has none
    of its conditions, one sentence saying so and the command of a profile that has them."""
    if chapter is not None and not results.conditions:
        return no_conditions_sentence(chapter, profile, results_dir)
    cov = results.coverage
    found = [m for m in requested if ((cov["model"] == m) & ((cov["stored"] + cov["skipped"]) > 0)).any()]
    lines = []
    if found:
        mine = cov[cov["model"].isin(found)]
        held = mine[(mine["stored"] + mine["skipped"]) > 0]
        if imported_profile(profile):
            pairs = f"{len(held)} of the {len(mine)} (model, condition) pairs this page reads for them are stored"
        else:
            complete = mine[mine["missing"] == 0]
            pairs = f"{len(complete)} of the {len(mine)} (model, condition) pairs this page reads for them are complete"
        lines.append(
            f"{len(found)} of the run's {len(requested)} models are in the store ({', '.join(found)}); "
            f"{pairs} ({int(mine['stored'].sum())} samples in all)."
        )
        lines.append(sample_sentence(results, profile))
    absent = absent_sentence(results, profile, results_dir, requested)
    if absent:
        lines.append(absent)
    if not imported_profile(profile):
        short = cov[(cov["missing"] > 0) & ((cov["stored"] + cov["skipped"]) > 0)]
        if len(short):
            listed = "; ".join(
                f"{r.model} {r.condition} ({r.stored} of {r.expected if r.expected is not None else '?'} stored)"
                for r in short.head(LISTED).itertuples()
            )
            more = f" and {len(short) - LISTED} more" if len(short) > LISTED else ""
            command = bring_command(profile, results_dir, [], [])
            lines.append(f"**Incomplete:** {listed}{more}. Compute the rest with `{command}`.")
    if len(results.skipped):
        reasons = results.skipped["reason"].map(lambda r: r.split(":")[0]).value_counts()
        text = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
        if imported_profile(profile):
            lines.append(f"{len(results.skipped)} samples of the original study's files are left out: {text}.")
        else:
            lines.append(f"{len(results.skipped)} samples were not computed and are left out: {text}.")
    elif found:
        lines.append("No sample was skipped.")
    return "\n\n".join(line for line in lines if line)


def layer_counts(rows: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Models whose stored layer count differs from the registry's: model -> (stored, registry)."""
    if rows.empty or "n_layers" not in rows:
        return {}
    out = {}
    for model, layers in rows.groupby("model", sort=False)["n_layers"].first().items():
        info = registry.known_model(model)
        if info is not None and info.layers and int(layers) != info.layers:
            out[str(model)] = (int(layers), info.layers)
    return out


def layer_note(rows: pd.DataFrame) -> str | None:
    """One sentence naming every model whose numbers have another layer count than the registry's."""
    counts = layer_counts(rows)
    if not counts:
        return None
    listed = "; ".join(f"{m}: {n} layers in the stored numbers, the model has {r}" for m, (n, r) in counts.items())
    return (
        f"Layer counts other than the models': {listed}. Early, middle and late layers are thirds of the stored layers"
    )


def unpaired_sentence(
    page_models: Sequence[str], requested: Sequence[str], profile, results_dir, *, conditions, checks: Sequence[str]
) -> str:
    """The paper models present without their base or instruct partner: ``checks`` (those of an
    instruct model against its own base) are not checked for them; the command that brings the partner."""
    present = set(page_models)
    lonely = []
    for base, instruct in registry.PAPER_PAIRS:
        if (base in present) != (instruct in present):
            have, lack = (base, instruct) if base in present else (instruct, base)
            lonely.append((have, lack))
    if not lonely:
        return ""
    listed = "; ".join(f"{have} without {lack}" for have, lack in lonely)
    command = bring_command(profile, results_dir, [lack for _, lack in lonely], conditions)
    verb = "import" if imported_profile(profile) else "compute"
    return (
        f"**Without its pair:** {listed}, so {' and '.join(checks)} (an instruct model against its own base) "
        "is not checked for "
        f"{'it' if len(lonely) == 1 else 'them'}; to {verb} the missing model: `{command}`."
    )


def verbatim_counts(page) -> pd.DataFrame:
    """Per model and dataset with answer-scored rows: how many of the run's instructions have a
    Detailed CoT that states the appended answer word for word (``data.verbatim_answer_ids``), of
    those it holds (the reasoning step is shown on those beside the whole)."""
    from analysis.findings.pooling import reasoning_datasets

    rows = []
    for model, cd in page.draws.items():
        for dataset in reasoning_datasets(cd):
            key = (cd.condition_key(dataset, ANSWER_AFTER_CHAIN), "q", "nuclear_norm")
            if key not in cd.samples:
                continue
            held = set(cd.samples[key][1].tolist())
            stated = held & set(data.verbatim_answer_ids(dataset, page.params.data_dir))
            rows.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "instructions": len(held),
                    "whose Detailed CoT states the answer": len(stated),
                }
            )
    return pd.DataFrame(rows)


ANSWER_AFTER_CHAIN = "detailed_answer"  # the answer scored after the instruction's own Detailed CoT
