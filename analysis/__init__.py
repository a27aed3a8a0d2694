"""Layer-wise gradient spectra of LLMs under fast vs. slow thinking data.

Data flows one way: data -> prompts -> gradients -> spectra -> store -> metrics -> plots.
"""

__version__ = "0.1.0"
