"""HTML pages from Jinja2 templates: the one way envgym's web pages are rendered.

A package that serves pages keeps its templates in a ``templates/`` folder
beside its modules (shipped as package data) and renders one with
``render_template("envgym.leaderboard", "index.html", entries=...)``.

Every value a template shows is escaped (autoescape is on for every template,
whatever its file name), so a submitter's name or a model's reply holding
``<script>`` shows as text; HTML made elsewhere (an SVG plot) goes in only
as `markupsafe.Markup`. A name a template uses but the caller did not pass is
an error (`jinja2.StrictUndefined`), never an empty string on the page.
"""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

__all__ = ["render_template"]


@functools.cache
def _environment(package: str) -> Environment:
    return Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        # Block tags on their own lines leave no blank lines in the page.
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )


def render_template(package: str, name: str, /, **context: Any) -> str:
    """The template `name` of `package`'s ``templates/`` folder, rendered with `context`."""
    return _environment(package).get_template(name).render(**context)
