"""The study kinds: one module each behind one interface (base.StudyKind), and the
registry from kind name to kind. Everything kind-specific lives in the kind's module, its
template (templates/annotate/_<name>.html) and its report function (evaluation/report/);
the rest of annotate asks `get_kind(study.kind)`. docs/architecture.md: how to add one.
Code that must name one kind uses its constant (`from evaluation.report.kinds import
PAIRWISE_ALIGNMENT`), never the spelt name.
"""
import importlib
import pkgutil

from annotate.kinds.base import StudyKind

# Every module of this package with a `KIND` (a StudyKind) is a kind, found by discovery as
# its report module is (evaluation/report/kinds/): a new kind names itself nowhere else.
# Registry order = StudyKind.order (the API's examples show the first), then name.
_KINDS = [module.KIND for module in (importlib.import_module(f"{__name__}.{info.name}")
                                     for info in pkgutil.iter_modules(__path__)) if hasattr(module, "KIND")]
REGISTRY: dict[str, StudyKind] = {kind.name: kind for kind in sorted(_KINDS, key=lambda kind: (kind.order, kind.name))}
KINDS = tuple(REGISTRY)


class UnknownKind(ValueError):
    """A kind name that is not registered."""


def get_kind(name: str) -> StudyKind:
    """The kind called `name`; UnknownKind if there is none."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownKind(f"unknown study kind {name!r}") from None


def all_kinds() -> list[StudyKind]:
    """Every registered kind, in registration order."""
    return list(REGISTRY.values())


def kind_choices() -> list[tuple[str, str]]:
    """Study.kind choices (a callable, so a new kind needs no migration)."""
    return [(name, name) for name in REGISTRY]


def questions_for(kind: str, config: dict, item_data: dict) -> list[dict]:
    """The questions of one item of a `kind` study; `config` is Study.config plus allow_tie."""
    return get_kind(kind).questions(config, item_data)


def assignment_item(assignment) -> dict:
    """The item's data as `assignment` shows it (StudyKind.shown_item: of an item with more
    than two candidates, the shown pair only): what its questions, tokens, display and
    accepted answers are made from."""
    return get_kind(assignment.study.kind).shown_item(assignment.item.data, assignment.shown_order)


def study_config(study) -> dict:
    """A study's config as the kinds read it: Study.config plus `allow_tie`."""
    return {**(study.config or {}), "allow_tie": study.allow_tie}
