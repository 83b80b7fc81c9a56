# Sphinx configuration of the llmdisc supplementary (staged by llmdisc.pipeline.supplementary; do not edit the
# staged copy). MyST-NB renders the executed notebooks' stored outputs: nothing is executed here.
project = "llmdisc — supplementary material"
author = "llmdisc"
copyright = "the llmdisc authors (code MIT; UCI Adult CC BY 4.0; ACS PUMS public domain)"
language = "en"
extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# Notebooks: render what the run stored; never execute, never cache-execute.
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js = {}  # the widget loaders come from a CDN: none of our notebooks uses widgets
nb_mime_priority_overrides = [("html", "text/latex", None)]  # LaTeX outputs would need MathJax from a CDN
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# Numbered, cross-referenced figures and tables.
numfig = True
numfig_format = {"figure": "Figure %s", "table": "Table %s", "code-block": "Listing %s", "section": "§ %s"}

# Offline and self-contained: no MathJax (it loads from a CDN), no copied sources, no build date.
mathjax_path = "data:,"
html_theme = "sphinx_book_theme"
html_title = "LLM-as-a-Discriminator — supplementary"
html_static_path = ["_static"]
html_css_files = ["llmdisc.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "home_page_in_toc": True,
}
html_favicon = "_static/favicon.svg"  # else the browser asks for /favicon.ico and logs a 404
html_context = {"default_mode": "light"}
