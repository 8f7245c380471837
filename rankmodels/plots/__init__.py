"""Figures and reports: RAFOS track maps (cartopy, offline Natural Earth), TOA diagrams,
filter diagnostics and the HTML run report.

Modules: :mod:`~rankmodels.plots.tracking` (figures), :mod:`~rankmodels.plots.report` (HTML),
:mod:`~rankmodels.plots.cartopy_data` (shipped Natural Earth data),
:mod:`~rankmodels.plots.track_summary` (numbers shown), :mod:`~rankmodels.plots.truth` (the true
track beside a simulated record), :mod:`~rankmodels.plots.study_plots` (simulation-study
figures), :mod:`~rankmodels.plots.style`. User strings (float ids, source names, file names)
are shown through :func:`rankmodels.text.printable`.
Importing this package does not import cartopy or pyplot.
"""
