"""The rankmodels command-line application (Click). Thin: parse, call the library, write, report.

This folder installs as the package ``rankmodels_app`` (pyproject.toml maps it), so imports say
``rankmodels_app``; a top-level ``apps`` would collide with other projects' packages.
"""
