"""The chapters that show the checks, by the groups of checks that share them."""

from __future__ import annotations

from analysis.findings.scopes import SUMMARY_CHAPTERS

FAMILY_CHAPTERS = ("math_reasoning", "commonsense_reasoning", "pretrained_vs_instruct")
READING = (*SUMMARY_CHAPTERS, *FAMILY_CHAPTERS)  # the paper's findings on reasoning data
LENGTH = (*READING, "beyond_the_paper")  # L and L2
TRAINING = ("during_training",)  # only a training profile's book has rows these checks read
GAP_CHAPTER = "where_the_gap_comes_from"  # the chapter that splits F1's and F3's gaps
GAP_CHAPTERS = (*SUMMARY_CHAPTERS, GAP_CHAPTER)  # the checks on where the gaps come from
