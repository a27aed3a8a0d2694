"""What an import of the original study's files did: per file and in all, in the words the command prints.

Each file gets one line of counts; each kind of rejected line one line naming the file and the first
line concerned; the import as a whole one summary line (files, samples imported, already stored,
rejected by kind). The run log keeps every file's record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analysis import data
from analysis.extract.original_sources import ORIGIN, model_for
from analysis.extract.token_counts import fill_command as token_fill_command

PROBLEMS = {
    "unmatched": "matches no sample of the data file (instruction and output)",
    "duplicate": "repeats a sample already read from this file",
    "cut": "cut last line (the file ends inside a record)",
    "malformed": "not a JSON line",
    "foreign": "not a record of the original format",
    "non_finite": "non-finite values (stored as skipped, not as numbers)",
}

REJECTED = {  # the summary's short name of each kind
    "unmatched": "unmatched",
    "duplicate": "duplicate",
    "cut": "cut",
    "malformed": "malformed",
    "foreign": "foreign",
    "non_finite": "non-finite",
    "file": "files not placed",
}


@dataclass
class FileReport:
    """What importing one file did: counts, and the first line of each problem."""

    file: str
    sha256: str = ""
    model: str | None = None
    condition: str | None = None
    lines: int = 0
    imported: int = 0
    already_stored: int = 0
    problems: dict[str, int] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)
    detail: dict[str, str] = field(default_factory=dict)
    skipped_file: str | None = None  # why the whole file was not imported
    already_imported: bool = False  # its contents (same sha256) are in the store already
    repaired: int = 0  # samples stored as skipped (non-finite) before, now imported with finite values
    withheld: bool = False  # --strict: nothing imported because a line was rejected
    layers: int | None = None
    note: str | None = None  # e.g. a layer count other than the registry's for this model
    tokens_counted: int = 0  # samples stored with R (their response token count)
    tokens_unknown: str | None = None  # why the samples imported were stored without R
    megabytes: float = 0.0
    seconds: float = 0.0

    def count(self, kind: str, line: int, detail: str = "") -> None:
        self.problems[kind] = self.problems.get(kind, 0) + 1
        if kind not in self.first_line:
            self.first_line[kind] = line
            if detail:
                self.detail[kind] = detail

    @property
    def rejected(self) -> int:
        """Lines not stored as numbers (every kind of problem)."""
        return sum(self.problems.values())

    def problem_lines(self) -> list[str]:
        """One line per kind of problem: file, first line, what is wrong, how many lines."""
        if self.skipped_file:
            return [f"{self.file}: not imported: {self.skipped_file}"]
        out = [f"{self.file}: note: {self.note}"] if self.note else []
        for kind, n in self.problems.items():
            extra = f" ({self.detail[kind]})" if kind in self.detail else ""
            out.append(
                f"{self.file}: line {self.first_line[kind]}: {PROBLEMS[kind]}{extra}; "
                f"{n} such line{'s' if n > 1 else ''} in this file"
            )
        return out

    def summary(self) -> str:
        """One line: where the file went and how many samples it gave."""
        if self.skipped_file:
            return f"{self.file}: not imported"
        if self.already_imported:
            before = f", {self.rejected} lines rejected then" if self.rejected else ""
            return f"{self.file} -> {self.model} {self.condition}: already imported (sha256 {self.sha256[:12]}{before})"
        if self.withheld:
            return (
                f"{self.file} -> {self.model} {self.condition}: not imported (--strict: {self.rejected} lines rejected)"
            )
        repaired = f" ({self.repaired} of them stored as skipped before)" if self.repaired else ""
        tokens = f"; R counted for {self.tokens_counted}" if self.tokens_counted else ""
        tokens += "; R unknown" if self.tokens_unknown and self.imported else ""
        return (
            f"{self.file} -> {self.model} {self.condition}: {self.imported} imported{repaired}, "
            f"{self.already_stored} already stored, {self.rejected} lines not stored{tokens}"
        )

    def as_record(self) -> dict:
        """The run log's record of this file."""
        return {
            "file": self.file,
            "sha256": self.sha256,
            "origin": ORIGIN,
            "model": self.model,
            "condition": self.condition,
            "lines": self.lines,
            "imported": self.imported,
            "already_stored": self.already_stored,
            "problems": dict(self.problems),
            "first_line": dict(self.first_line),
            "not_imported": self.skipped_file,
            "already_imported": self.already_imported,
            "repaired": self.repaired,
            "withheld": self.withheld,
            "layers": self.layers,
            "note": self.note,
            "tokens_counted": self.tokens_counted,
            "tokens_unknown": self.tokens_unknown,
            "megabytes": round(self.megabytes, 3),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class ImportResult:
    """Every file's report, the study files absent for the models seen, and the time taken."""

    files: list[FileReport]
    absent: dict[str, list[str]]  # model -> conditions asked for without a file
    seconds: float
    token_problems: dict[str, str] = field(default_factory=dict)  # model -> why its tokenizer is unavailable

    @property
    def megabytes(self) -> float:
        return sum(f.megabytes for f in self.files)

    @property
    def imported(self) -> int:
        return sum(f.imported for f in self.files)

    def rejected(self) -> dict[str, int]:
        """Lines rejected, by kind, over every file (files that could not be placed: ``file``)."""
        counts: dict[str, int] = {}
        for report in self.files:
            for kind, n in report.problems.items():
                counts[kind] = counts.get(kind, 0) + n
        unplaced = sum(bool(report.skipped_file) for report in self.files)
        return counts | ({"file": unplaced} if unplaced else {})

    def token_lines(self, out) -> list[str]:
        """Per model whose samples were stored without R: how many, why, and the command that adds R later."""
        lines = []
        for model, problem in self.token_problems.items():
            unknown = sum(f.imported for f in self.files if f.model == model and f.tokens_unknown)
            if unknown:
                lines.append(
                    f"{model}: token counts unknown for {unknown} samples imported ({problem}); add them later with "
                    f"`{token_fill_command(out, [model])}`"
                )
        return lines

    @property
    def clean(self) -> bool:
        """Whether nothing was rejected: every line of every file stored (or stored before)."""
        return not self.rejected()

    def summary(self, out) -> str:
        """The command's last line: files, samples imported, already stored, rejected by kind."""
        n = len(self.files)
        already = sum(f.already_stored for f in self.files)
        whole = sum(f.already_imported for f in self.files)
        withheld = sum(f.withheld for f in self.files)
        rejected = self.rejected()
        counted = sum(f.tokens_counted for f in self.files)
        unknown = sum(f.imported for f in self.files if f.tokens_unknown)
        kinds = ", ".join(f"{count} {REJECTED[kind]}" for kind, count in rejected.items())
        speed = self.megabytes / self.seconds if self.seconds else 0.0
        return (
            f"{n} file{'s' if n != 1 else ''}: {self.imported} samples imported, {already} already stored"
            + (f" ({whole} files already imported whole)" if whole else "")
            + f"; rejected: {kinds or 'none'}"
            + (f"; {withheld} files not imported (--strict)" if withheld else "")
            + f" ({self.megabytes:.1f} MB, {speed:.1f} MB/s, into {out})"
            + (
                f"; R (response tokens) counted for {counted} samples, unknown for {unknown}"
                if counted or unknown
                else ""
            )
        )


def absent_files(files: list[FileReport], models: Iterable[str] | None, conditions: Iterable[str] | None):
    """Per model (asked for, or seen), the study conditions asked for that had no file."""
    seen = {f.model for f in files if f.model and f.condition}
    chosen = [model_for(m) for m in models] if models else sorted(seen)
    keys = list(conditions) if conditions else [c.key for c in data.study_conditions()]
    present = {(f.model, f.condition) for f in files}
    return {m: [k for k in keys if (m, k) not in present] for m in chosen if any((m, k) not in present for k in keys)}
