"""The loss screen: pairs of Detailed-CoT responses at matched loss for G1, found with forward passes only.

Irrelevant responses have a higher mean token loss than correct ones, and in a run's drawn sample
few pairs (one instruction's correct and irrelevant response) lie within ``LOSS_CALIPER`` nats of
each other. A forward pass costs about a third of a gradient's forward and backward pass, so the
screen reads the two mean losses of further instructions, in the seeded order the draw takes its
own from (``sample_draws.sample_order``), until the dataset has ``MATCHED_PAIRS`` matched pairs,
the drawn ones included, or ``ExtractionSettings.loss_screen`` instructions are screened; then it
computes the gradients of the matched pairs like any sample (``runner.extract`` with their ids).
The losses are those of the gradient pass (``gradients.token_losses``, float32), so G1 finds the
same pairs within the caliper from the stored rows. What was screened is kept beside the store
(``analysis.extract.screens``) after each instruction: an interrupted screen goes on where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import torch
from tqdm.auto import tqdm

from analysis import data
from analysis.core import registry
from analysis.core.settings import LOSS_CALIPER, MATCHED_PAIRS, ExtractionSettings
from analysis.core.vocabulary import CORRECT, IRRELEVANT, RESPONSES
from analysis.data.records import load_records
from analysis.data.sample_draws import sample_order
from analysis.extract import gradients, models, runner, screens
from analysis.extract.preparation import PreparedSample, prepare_samples
from analysis.store import ResultsStore


def condition_key(dataset: str, responses: str) -> str:
    """The screened condition of ``dataset`` with ``responses``: its Detailed CoT."""
    return f"{dataset}/{screens.SETTING}/{responses}"


def screened_datasets(conditions: Sequence[str]) -> tuple[str, ...]:
    """The datasets whose correct and irrelevant Detailed-CoT conditions are both in ``conditions``
    (those a screen can pair), in their order there."""
    wanted = set(conditions)
    datasets = dict.fromkeys(data.get_condition(c).dataset for c in conditions)
    return tuple(d for d in datasets if all(condition_key(d, r) in wanted for r in RESPONSES))


def mean_loss(loaded: models.LoadedModel, encoded) -> float:
    """The mean token loss of one encoded sample, forward pass only (the gradient pass's loss)."""
    pad = models.pad_token_id(loaded.tokenizer)
    batch = gradients.make_batch([encoded.input_ids], [encoded.prompt_length], pad, loaded.device)
    with torch.inference_mode():
        return float(gradients.per_sample_losses(loaded.model, batch)[0])


def encoded_pairs(
    loaded: models.LoadedModel, dataset: str, indices: Sequence[int], *, max_length: int, data_dir
) -> dict[str, tuple[list[PreparedSample], dict[int, str]]]:
    """Per response type, the encoded Detailed-CoT responses of ``indices`` and the skipped ones with
    why (``prepare_samples``), each data file resolved once."""
    out = {}
    for responses in RESPONSES:
        resolved = data.resolve(condition_key(dataset, responses), data_dir)
        out[responses] = prepare_samples(loaded, resolved, list(indices), max_length, data_dir=data_dir)
    return out


def screened_pair(
    loaded: models.LoadedModel, encoded: dict[str, tuple[list[PreparedSample], dict[int, str]]], index: int
) -> screens.Screened:
    """The two mean token losses of instruction ``index`` (None for a response skipped) from its
    ``encoded_pairs``."""
    losses: dict[str, float | None] = {}
    reasons = []
    for responses in RESPONSES:
        prepared, skips = encoded[responses]
        sample = next((p for p in prepared if p.index == index), None)
        losses[responses] = mean_loss(loaded, sample.encoded) if sample is not None else None
        reasons += [f"{responses}: {skips[index]}"] if index in skips else []
    return screens.Screened(index, losses[CORRECT], losses[IRRELEVANT], "; ".join(reasons) or None)


def drawn_losses(
    loaded: models.LoadedModel, dataset: str, store: ResultsStore, *, settings: ExtractionSettings, data_dir
) -> tuple[tuple[int, ...], dict[int, tuple[float, float]]]:
    """The run's draw of ``dataset`` and the stored mean losses of its pairs (both responses stored)."""
    plans = {
        r: runner.plan_run(
            loaded.name, loaded.template, condition_key(dataset, r), store, settings=settings, data_dir=data_dir
        )
        for r in RESPONSES
    }
    drawn = plans[CORRECT].drawn
    stored = {r: store.sample_values(plans[r].key, "loss") for r in RESPONSES}
    both = {i: (stored[CORRECT][i], stored[IRRELEVANT][i]) for i in drawn if all(i in stored[r] for r in RESPONSES)}
    return drawn, both


def candidates(dataset: str, drawn: Sequence[int], *, data_dir) -> list[int]:
    """The instructions a screen may read, in order: the seeded order the draw takes its own from
    (the None-CoT pairs whose irrelevant answer equals the correct one last, as there), the drawn
    ones left out."""
    count = len(load_records(data.resolve(condition_key(dataset, CORRECT), data_dir).path))
    excluded = data.identical_response_ids(dataset, "none", data_dir)
    taken = set(drawn)
    return [int(i) for i in sample_order(dataset, count, excluded=excluded) if int(i) not in taken]


def started_screen(
    loaded: models.LoadedModel, dataset: str, store: ResultsStore, *, settings: ExtractionSettings, data_dir
) -> tuple[screens.Screen, list[int]]:
    """The screen of ``dataset`` as kept (its losses, where they hold for this run), with this run's
    settings, and the instructions it is to read in order."""
    drawn, losses = drawn_losses(loaded, dataset, store, settings=settings, data_dir=data_dir)
    order = candidates(dataset, drawn, data_dir=data_dir)
    kept = screens.find(store.root, loaded.name, dataset)
    reused = kept.screened if kept and kept.reusable(template=loaded.template, max_length=settings.max_length) else []
    screen = screens.Screen(
        model=loaded.name,
        dataset=dataset,
        template=loaded.template,
        max_length=settings.max_length,
        caliper=LOSS_CALIPER,
        target=MATCHED_PAIRS,
        budget=settings.loss_screen,
        available=len(order),
        drawn=len(losses),
        drawn_matched=sum(abs(i - c) <= LOSS_CALIPER for c, i in losses.values()),
        screened=list(reused),
    )
    return screen, order


def screen_dataset(
    loaded: models.LoadedModel,
    dataset: str,
    store: ResultsStore,
    *,
    settings: ExtractionSettings,
    data_dir=None,
    progress: bool = True,
) -> screens.Screen:
    """Screen ``dataset`` (see the module docstring), keeping the screen after each instruction,
    then compute the gradients of the matched pairs' two responses into the store."""
    screen, order = started_screen(loaded, dataset, store, settings=settings, data_dir=data_dir)
    read = {s.index for s in screen.screened}
    todo = [i for i in order[: settings.loss_screen] if i not in read]
    encoded = encoded_pairs(loaded, dataset, todo, max_length=settings.max_length, data_dir=data_dir)
    bar = tqdm(total=len(todo), desc=f"{registry.model_slug(loaded.name)} {dataset} loss screen", disable=not progress)
    try:
        for index in todo:
            if screen.done:
                break
            screen.screened.append(screened_pair(loaded, encoded, index))
            screens.record(store.root, screen)
            bar.update(1)
    finally:
        bar.close()
    screens.record(store.root, screen)
    for responses in RESPONSES:
        runner.extract(
            loaded,
            condition_key(dataset, responses),
            store,
            settings=settings,
            data_dir=data_dir,
            progress=progress,
            ids=screen.matched_ids,
        )
    return screen


def pending(
    model: str, template: str, datasets: Sequence[str], store: ResultsStore, *, settings: ExtractionSettings, data_dir
) -> list[str]:
    """The datasets whose screen by ``model`` has not stopped, or whose matched pairs' gradients are
    not all stored (none where the settings screen nothing)."""
    if not settings.loss_screen:
        return []
    out = []
    for dataset in datasets:
        kept = screens.find(store.root, model, dataset)
        if (
            kept is None
            or not kept.reusable(template=template, max_length=settings.max_length)
            or not _stopped(kept, settings)
        ):
            out.append(dataset)
            continue
        for responses in RESPONSES:
            plan = runner.plan_run(
                model,
                template,
                condition_key(dataset, responses),
                store,
                settings=settings,
                data_dir=data_dir,
                ids=kept.matched_ids,
            )
            if plan.todo:
                out.append(dataset)
                break
    return out


def _stopped(kept: screens.Screen, settings: ExtractionSettings) -> bool:
    """Whether a kept screen has stopped under these settings (its budget and the study's caliper and target)."""
    return replace(kept, budget=settings.loss_screen, caliper=LOSS_CALIPER, target=MATCHED_PAIRS).done


def screen_model(
    loaded: models.LoadedModel,
    datasets: Sequence[str],
    store: ResultsStore,
    *,
    settings: ExtractionSettings,
    data_dir=None,
    progress: bool = True,
    say: Callable[[str], None] = print,
) -> list[screens.Screen]:
    """Screen every dataset in ``datasets`` with the loaded model; one line said per dataset."""
    out = []
    for dataset in datasets:
        screen = screen_dataset(loaded, dataset, store, settings=settings, data_dir=data_dir, progress=progress)
        say(
            f"{loaded.name} {dataset} loss screen: {len(screen.screened)} screened, {len(screen.matched_ids)} matched "
            f"within {screen.caliper} nats ({screen.drawn_matched} of {screen.drawn} drawn pairs), {screen.why_stopped()}"
        )
        out.append(screen)
    return out
