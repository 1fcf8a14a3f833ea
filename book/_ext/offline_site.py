"""A small Sphinx extension that keeps the built site offline and error-free.

* Drops the Thebe configuration scripts that sphinx-thebe (always loaded by
  Jupyter Book 1) adds: the book does not use Thebe, the script names a CDN
  URL, and it is added twice per page, which is a JavaScript SyntaxError.
* Sets the theme's default colour mode, so that a first visit (empty local
  storage) does not log "Got invalid theme mode" to the console.
* Adds the book's own stylesheet, ``static/attnbook.css`` beside this file:
  figures legible on phones, a white card behind figures in dark mode, print
  rules for ``make pdf`` (see its comments).
* Drops the ``application/vnd.jupyter.widget-state+json`` script that myst-nb
  writes into a page from its notebook's ``widgets`` metadata (see
  :func:`_drop_widget_state`).
* Gives each bibliography entry the ARIA role ``listitem``: docutils marks the
  list ``role="list"`` but its entries ``role="doc-biblioentry"``, which axe-core
  reports as a critical violation (aria-required-children) on the references page.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


def _drop_thebe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    kept = []
    for script in scripts:
        body = getattr(script, "attributes", {}).get("body", "") or ""
        filename = getattr(script, "filename", str(script)) or ""
        if "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js") or "thebe" in filename:
            continue
        kept.append(script)
    context["script_files"] = kept


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _drop_widget_state(app, pagename, templatename, context, doctree):
    """Drop the page's widget-state script: no widget manager here reads it.

    The site loads no ipywidgets manager (``nb_ipywidgets_js: {}`` in
    _config.yml: the explorers run from their static fragments), so saved
    widget models are dead weight: chapter 13's page once carried 3.8 MiB of
    them. The library already opens no comm for a widget made in static mode
    (``attnbook/widgets/_unseen.py``), so whatever executes the chapters has no
    state to save; this is the second line, for any widget that still reaches
    a notebook's metadata (ipywidgets 7.7, a widget a chapter makes itself,
    a cached notebook from before), so that the site is the same whichever way
    its notebooks were executed: nbval's cache (which keeps no widget state)
    or Jupyter Book's own execution (nbclient keeps it by default).
    """
    scripts = context.get("script_files")
    if not scripts:
        return
    context["script_files"] = [
        script
        for script in scripts
        if (getattr(script, "attributes", None) or {}).get("type") != WIDGET_STATE
    ]


def _default_mode(app, config):
    # The theme's template reads `default_mode` from the HTML context; "auto"
    # follows the reader's system setting, as the theme intends.
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "auto")
    config.html_context = context


def _static_files(app, config):
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def _bibliography_roles(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("config-inited", _static_files)
    app.add_css_file("attnbook.css")
    app.connect("html-page-context", _bibliography_roles)
    app.connect("html-page-context", _drop_thebe, priority=900)
    # After myst-nb's add_per_page_html_resources (default priority) adds it.
    app.connect("html-page-context", _drop_widget_state, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
