"""One report module per study kind (`evaluation/report/kinds/<kind>.py`), each with
`build(inp) -> dict`; the registry below maps kind names to them. BUILDERS is derived
from it, so a new kind adds one module and one line here."""
from types import ModuleType

from evaluation.vocabulary import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY

from . import aspect_pairwise, explanation_choice, pairwise_alignment, similarity_survey

REPORT_MODULES: dict[str, ModuleType] = {
    PAIRWISE_ALIGNMENT: pairwise_alignment,
    EXPLANATION_CHOICE: explanation_choice,
    SIMILARITY_SURVEY: similarity_survey,
    ASPECT_PAIRWISE: aspect_pairwise,
}
