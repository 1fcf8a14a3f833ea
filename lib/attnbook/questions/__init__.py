"""The concept questions' data: one TOML file per chapter (format: README.md here).

Read them with :func:`attnbook.quiz.load`; they are package data, so a Colab
or pip install of the library has them.
"""
