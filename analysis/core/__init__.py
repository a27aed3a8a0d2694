"""What every stage reads: the study's declarations (vocabulary, statistics, models, chapters, extraction
settings) and its shared helpers (the error base class, number formatting, memory release). Nothing here
imports a later stage."""
