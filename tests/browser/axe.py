"""Helpers of the participant browser tests: axe-core (from npm, package.json at the repo
root; scripts/test.sh installs it) run in the page, CSP violations and console errors
recorded from the first script on, and whether an element is in the first viewport."""
from pathlib import Path

import pytest

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
# Runs before any page script (injected by the browser, so the CSP does not apply to it).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
"""
AXE_RUN = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
  .filter(v => v.impact === "critical" || v.impact === "serious")
  .map(v => v.id + " (" + v.impact + "): " + v.nodes.map(n => n.target.join(" ")).slice(0, 3).join(", "))"""


def axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` at the repository root (scripts/test.sh does)")
    return AXE.read_text()


def watch(page):
    """Records the page's CSP violations (window.__csp) and console errors (page.problems)."""
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.problems = []
    page.on("console", lambda m: page.problems.append(f"{m.text} {m.location.get('url', '')}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    return page


def serious_violations(page) -> list[str]:
    """axe-core's critical and serious violations on the page as it is now. Evaluated
    through the DevTools protocol, so the page's CSP does not stop the injection."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source())
    return page.evaluate(AXE_RUN)


def csp_violations(page) -> list[str]:
    return page.evaluate("window.__csp || []")


def in_first_viewport(page, selector: str, whole: bool = True) -> bool:
    """Whether the first element matching `selector` is on screen with the page scrolled to
    the top (whole: all of it; else its top line)."""
    return page.evaluate("""([selector, whole]) => {
        window.scrollTo(0, 0);
        const el = document.querySelector(selector);
        if (!el) return false;
        const r = el.getBoundingClientRect();
        const bottom = whole ? r.bottom : r.top + 20;
        return r.top >= 0 && r.left >= 0 && bottom <= window.innerHeight && r.right <= window.innerWidth;
    }""", [selector, whole])
