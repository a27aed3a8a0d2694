"""Layer-wise gradient spectra of LLMs under fast vs. slow thinking data.

The data flow one way through the stages, each a subpackage: ``data`` -> ``extract`` (prompts,
per-sample gradients, singular values) -> ``store`` -> ``findings`` (curves, bootstrap, verdicts)
-> ``report`` (what a book page shows) -> ``study`` (a run: extraction, pages, book).
"""

__version__ = "0.1.0"
