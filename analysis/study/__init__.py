"""The study as a run: extraction of a profile, then the notebooks by papermill and the book build.

``pipeline`` runs a profile, ``book`` executes notebooks and builds the Jupyter Book, ``publish``
fills the published book's configuration, ``your_data`` runs the your-data page
(``profile-data``), ``measured`` keeps the measured runs (``measured``), ``screenshot`` makes the
README's picture of the first page (``screenshot``).
"""
