"""The book's programs that are not tests: printing the PDF, notebook upkeep
(the install cell, re-execution), the Colab-like run, the JupyterLab harness,
the benchmarks, and what they share with the tests (paths, the local server,
the browser). Run them from the repository root, e.g. ``python -m tools.bench``.
"""
