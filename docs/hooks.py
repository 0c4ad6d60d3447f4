"""MkDocs hooks of this site (mkdocs.yml: hooks).

A `|` inside a code span in a table row is written `\\|` so that GitHub, which renders these
pages too, does not split the cell there; Python-Markdown keeps such a pipe in its cell but
also keeps the backslash. This hook drops it from the rendered code.
"""

from __future__ import annotations

import re
from typing import Any

_CODE = re.compile(r"<code>.*?</code>", re.S)


def on_page_content(html: str, **kwargs: Any) -> str:
    return _CODE.sub(lambda m: m[0].replace("\\|", "|"), html)
