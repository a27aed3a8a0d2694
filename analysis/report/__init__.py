"""What the book's pages show, computed from the results store.

- ``page``: one call that opens a page's data (checked parameters, stored rows, bootstrap curves);
- ``sections``: the sections several pages share, each shown by one call;
- ``verdicts``: the findings as a reader sees them (matrix, paragraphs, numbers);
- ``curve_tables`` and ``figures``: exact numbers and the figures built from them;
- ``beyond``: questions beyond the paper (separability, response length, effective rank);
- ``load``, ``display``, ``provenance``: reading the store, showing results (long ones folded), what
  produced them;
- ``your_data``, ``your_data_samples``, ``your_data_figures``: the your-data page.
"""
