"""What the book's pages show, computed from the results store.

Modules:

- ``page``: one call opens a page's data: checked parameters, rows, curves, findings
- ``notebook_parameters``: every page's parameters (the names and defaults of its notebook's parameters cell),
  checked, with the run's record
- ``load``: reading what a page needs from the store, and saying what is missing
- ``coverage``: what a page's numbers cover and the command that brings what is absent
- ``sections``: the sections several pages share, one call each
- ``verdicts``: the verdict matrix's note, the plain summary under it, the tables of findings and parts
- ``voice``: the one voice of the book: how a verdict, a size, an interval, a scope, a reason and a count are
  written
- ``cells``: which findings a page's summaries read, and which part of a cell they print
- ``blocks``: what a page shows, as values: each section returns blocks (Markdown, HTML, a table, a figure, a
  fold)
- ``curve_tables``: the exact tables: MAD, RD, effective rank, pair comparisons
- ``figures``: which figures a page shows, from the curves and findings
- ``plots``: drawing only: layer curves, the verdict matrix, forest plots
- ``beyond``: the paragraphs and tables of the questions beyond the paper
- ``comparison``: imported vs extracted statistics, sample by sample
- ``display``: the one renderer: the blocks a section returns as a notebook's outputs, folds as ``<details>``
- ``gap_sources``: the chapter "Where the gap comes from": each declared gap split per layer, and the loss screen
- ``layer_gaps``: per layer, a chain's whole gap beside its deciding step on the answer's own tokens
- ``loss_convention``: fast over slow thinking's gap under the paper's mean loss and under a token-sum loss
- ``check_sections``: each check's own section, rendered from what the check declares, in the registry's order
- ``abstract``: the first page's scope, its few sentences of what was found and its figure, the checks read by their
  parts' roles
- ``chain``: any check that declares a chain (a gap and the steps that add up to it): its table, bars,
  tables per norm, sentences, and the ``split`` command's table read from a store
- ``gpu_check``: the GPU check on the reproducibility page: the record a GPU run keeps in
  ``benchmarks/gpu_check.json``, or that none is kept yet
- ``provenance``: what produced the numbers: run log, versions, checksums, benchmarks
- ``reproducibility``: the sections of the page "Reproducibility", each returning the blocks it shows
- ``reproduction``: the summary that opens a book: the scope, then the checks read together (F1 and S, A3, F3
  and G1) with their sizes, intervals and verdicts; the other checks after the matrix
- ``training_chapter``: the chapter "During training"
- ``your_data_page``: the your-data page
- ``your_data_samples``: your samples ranked, as tables and files
- ``your_data_figures``: the your-data page's figures
- ``your_data_sections``: the sections of the your-data page, each returning the blocks it shows
"""
