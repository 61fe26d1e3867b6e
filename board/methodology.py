"""The methodology page's content: the project's own docs/*.md, rendered to HTML.

markdown-it-py with raw HTML disabled: a `<script>` or `onclick` typed into a doc comes out as
text, and link targets pass its URL validation (no `javascript:`). Rendered once per file
version (keyed by modification time), since the files only change with a deploy.
"""

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

# The rules a visitor reads, in the order they build on each other.
DOCS = (
    ("trust-and-ranking", "Trust and ranking"),
    ("cohorts", "Performance cohorts"),
    ("hardware-classes", "Hardware classes"),
    ("recipes", "Recipes"),
    ("champions", "Champions"),
    ("lab", "The recipe lab"),
)


@dataclass(frozen=True)
class Section:
    slug: str
    title: str
    html: SafeString | None  # None: the file is not there yet


def _shift_headings(state) -> None:
    """A doc's `#` title becomes the page's h2: the page has its own h1."""
    for token in state.tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"


def _table_in_scroll_box(self, tokens, index, options, env) -> str:
    """A wide table scrolls in its own box on a phone instead of widening the page."""
    if tokens[index].type == "table_open":
        return '<div class="table-wrap">' + self.renderToken(tokens, index, options, env)
    return self.renderToken(tokens, index, options, env) + "</div>"


def _renderer() -> MarkdownIt:
    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    renderer.enable("table")
    renderer.core.ruler.push("shift_headings", _shift_headings)
    renderer.add_render_rule("table_open", _table_in_scroll_box)
    renderer.add_render_rule("table_close", _table_in_scroll_box)
    return renderer


def render_markdown(text: str) -> SafeString:
    # Safe to mark: the renderer escapes every raw HTML tag and attribute it meets.
    return mark_safe(_renderer().render(text))  # noqa: S308


@lru_cache(maxsize=32)
def _render(path: str, mtime: float) -> SafeString:
    return render_markdown(Path(path).read_text(encoding="utf-8"))


def sections() -> list[Section]:
    docs_dir = Path(settings.BASE_DIR) / "docs"
    result = []
    for slug, title in DOCS:
        path = docs_dir / f"{slug}.md"
        try:
            html = _render(str(path), path.stat().st_mtime)
        except FileNotFoundError:
            html = None
        result.append(Section(slug, title, html))
    return result
