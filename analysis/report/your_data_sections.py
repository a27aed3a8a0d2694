"""The sections of the your-data page, each returning the blocks it shows (``analysis.report.blocks``):
what was read, the curves over the references, the levels, the placement, the data-quality reading,
the ranked samples (their files written) and the scratch control."""

from __future__ import annotations

from analysis.report import your_data_figures as page_figures
from analysis.report import your_data_page as page_data
from analysis.report import your_data_samples as samples
from analysis.report.blocks import Blocks, Figure, Markdown, Table
from analysis.report.blocks import figures as figure_blocks
from analysis.report.your_data_page import YourData


def read(page: YourData) -> Blocks:
    """What the page read: the user's files, the model and the references."""
    return [Markdown(page_data.coverage_text(page))]


def overlays(page: YourData) -> Blocks:
    """Per file: its nuclear norm and effective rank per layer over the reference settings."""
    out: Blocks = []
    for file in page.files:
        for stat, what in (("nuclear_norm", "nuclear norm"), ("effective_rank", "effective rank")):
            figure = page_figures.overlay_figure(page, file, stat)
            out.append(Figure(figure, f"{file.label}: {what} per layer over the reference settings"))
    return out


def levels(page: YourData) -> Blocks:
    return [Table(page_data.level_table(page), by="model")]


def placement(page: YourData) -> Blocks:
    """Which setting the data are closest to, and the classifier's out-of-fold assignments."""
    return [Markdown(samples.placement_text(page)), Table(samples.assignment_table(page), by=None)]


def confusion(page: YourData) -> Blocks:
    return [Table(samples.confusion_table(page), by=None)]


def quality(page: YourData) -> Blocks:
    return [Markdown(page_data.quality_text(page))]


def ranked(page: YourData) -> Blocks:
    """Each file's five lowest and five highest samples, and the files of the full ranking (written
    here, beside the results)."""
    out: Blocks = [Table(samples.score_preview(page, file), by=None) for file in page.files]
    written = samples.write_scores(page)
    listed = ", ".join(f"`{path}`" for path in written)
    return [*out, Markdown(f"Written: {listed}" if written else "No scores written.")]


def scratch(page: YourData) -> Blocks:
    """The same files through a randomly initialised copy of the model."""
    out: Blocks = [Markdown(page_data.scratch_text(page))]
    for file in page.files:
        out += figure_blocks(page_figures.scratch_figures(page, file), alt="nuclear norm and effective rank per layer")
    return out
