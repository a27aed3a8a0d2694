"""The study as a run: extraction of a profile, then the notebooks by papermill and the book build.

``pipeline`` runs a profile, ``book`` executes notebooks and builds the Jupyter Book, ``your_data``
runs the your-data page (``profile-data``).
"""
