"""Sphinx configuration of the lab's site (myst-nb pages, sphinx-book-theme).

Build it with ``python -m attention_lab docs OUT_DIR`` (``attention_lab/docs.py``): that command
lays out the sources (these pages, the level notebooks and the student exercise notebooks of the
release bundle, the benchmark tables from ``benchmarks/results/``) and runs ``sphinx-build -W``
on them. Nothing is executed: the pages show the notebooks' stored outputs.

The launch buttons of the notebook pages are set here, in one place: ``REPOSITORY`` and
``BRANCH`` are the public repository the buttons open (Binder builds it from ``environment.yml``;
Colab opens the notebook from it). There is no JupyterHub button: the theme's clones the whole
repository, solutions included, into the student's server with nbgitpuller, where the course's
hub gives each student the release bundle (docs/instructors/jupyterhub.md).
"""

#: the public repository of the lab and its branch, which Binder and Colab read
REPOSITORY = "https://github.com/attention-lab/attention-lab"
BRANCH = "main"

project = "attention-lab"
author = "the attention-lab authors"
copyright = "the attention-lab authors, MIT licence"

# sphinx-mathjax-offline: MathJax 3 served by the site itself, so formulas render offline
extensions = ["myst_nb", "sphinx-mathjax-offline"]
# nbval re-executes the notebooks; the site shows what they stored
nb_execution_mode = "off"
# headings get anchors, so pages link to sections by name (page.md#a-heading)
myst_heading_anchors = 3
# $...$ in the notebooks' Markdown is maths, as in JupyterLab
myst_enable_extensions = ["colon_fence", "dollarmath"]
# README.md: the repository's front page, copied in for the pages that include its sections
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md"]

html_theme = "sphinx_book_theme"
html_title = "attention-lab"
html_static_path = ["_static"]
html_css_files = ["lab.css"]
# pydata-sphinx-theme (under the book theme) logs a console error on every page without a mode
html_context = {"default_mode": "auto"}
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": BRANCH,
    # the notebooks sit at their repository paths in the built sources (notebooks/...)
    "path_to_docs": "",
    "use_repository_button": True,
    "launch_buttons": {
        "binderhub_url": "https://mybinder.org",
        "colab_url": "https://colab.research.google.com",
        "notebook_interface": "jupyterlab",
    },
}
