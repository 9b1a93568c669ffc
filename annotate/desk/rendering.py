"""Study instructions: Markdown to HTML that cannot inject markup or script.

Raw HTML is neutralised before Markdown sees it (every `<` and `&` is escaped, so no tag
can survive), and links or images whose URL scheme is not http(s)/mailto (e.g.
`javascript:`) lose their URL.
"""
from urllib.parse import urlsplit

import markdown
from django.utils.safestring import mark_safe
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

SAFE_SCHEMES = {"", "http", "https", "mailto"}


def _safe_url(url):
    scheme = urlsplit(url.strip()).scheme.lower()
    return scheme in SAFE_SCHEMES and not url.strip().lower().startswith(("//",))


class _DropUnsafeUrls(Treeprocessor):
    def run(self, root):
        for element in root.iter():
            for attribute in ("href", "src"):
                value = element.get(attribute)
                if value is not None and not _safe_url(value):
                    element.set(attribute, "#")


class _SafeUrlsExtension(Extension):
    def extendMarkdown(self, md):
        md.treeprocessors.register(_DropUnsafeUrls(md), "humeval_safe_urls", 0)


def render_markdown(text, tables=False):
    """Markdown -> safe HTML (marked safe for templates); `tables` adds pipe tables."""
    escaped = (text or "").replace("&", "&amp;").replace("<", "&lt;")
    extensions = [_SafeUrlsExtension(), *(["tables"] if tables else [])]
    html = markdown.markdown(escaped, extensions=extensions, output_format="html")
    return mark_safe(html)  # noqa: S308 - every tag in `html` was produced by Markdown itself
