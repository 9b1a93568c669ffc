"""export_study / import_study round-trip a study exactly, and refuse bad files whole."""
import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.models import Assignment, AuditLog, Batch, Item, Judgment, Prediction, Study
from annotate.studies.backup import BackupError, import_study, write_study

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def build_study(annotators):
    study = Study.objects.create(slug="bk", kind="pairwise_alignment", title="Backup", instructions="*read*",
                                 annotations_per_item=2, config={"note": "x"})
    study.annotators.set(annotators[:2])
    batch = Batch.objects.create(study=study, source="b1.jsonl", sha256="ab" * 32, created=2)
    for n in range(2):
        data = {"input": f"q{n}", "reference": "r",
                "candidates": [{"id": "m1", "text": "x"}, {"id": "m2", "text": "ü"}]}
        item = Item.objects.create(study=study, batch=batch, item_id=f"it-{n}", position=n, data=data,
                                   meta={"n": n}, gold="m1" if n else None, is_gold=bool(n),
                                   content_hash=f"{n:064d}", n_assigned=2, n_completed=1 + n % 2)
        for k, user in enumerate(annotators[:2]):
            a = Assignment.objects.create(study=study, item=item, annotator=user, shown_order={"choice": ["m2", "m1"]},
                                          expires_at=T0, completed_at=T0 if k == 0 or n else None, seconds=3.5)
            if a.completed_at:
                Judgment.objects.create(study=study, item=item, annotator=user, assignment=a, question="choice",
                                        value="m2", shown_order="m2|m1", seconds=3.5, submitted_at=T0)
        Prediction.objects.create(study=study, item=item, evaluator="rougeL", question="m1", value="0.25")
        Prediction.objects.create(study=study, item=item, evaluator="perse", annotator="ann1", question="choice",
                                  value="")
    AuditLog.objects.create(study=study, user=annotators[0], action="edit", object_type="judgment",
                            object_id="1", before={"value": "m1"}, after={"value": "m2"})
    return study


def dump(study):
    stream = io.StringIO()
    write_study(study, stream)
    return stream.getvalue()


def test_round_trip_is_exact(annotators):
    first = dump(build_study(annotators))
    Study.objects.all().delete()
    restored = import_study(io.StringIO(first))
    assert dump(restored) == first
    assert restored.judgments.count() == 3 and restored.items.count() == 2
    assert json.loads(first.splitlines()[0])["annotators"] == ["ann1", "ann2"]


def test_existing_slug_needs_replace_and_replace_keeps_one_copy(annotators):
    text = dump(build_study(annotators))
    with pytest.raises(BackupError, match="already exists"):
        import_study(io.StringIO(text))
    import_study(io.StringIO(text), replace=True)
    assert Study.objects.count() == 1 and Judgment.objects.count() == 3


def test_bad_line_writes_nothing(annotators):
    lines = dump(build_study(annotators)).splitlines()
    Study.objects.all().delete()
    bad = "\n".join(lines[:5] + ['{"type": "judgment", "item_id": "nope", "annotator": "ann1"}'] + lines[5:])
    with pytest.raises(BackupError, match=r"line 6: unknown item_id 'nope'"):
        import_study(io.StringIO(bad))
    assert Study.objects.count() == 0 and Item.objects.count() == 0


def test_users_missing_on_target_are_created_without_password(annotators, django_user_model, tmp_path):
    path = tmp_path / "bk.jsonl"
    call_command("export_study", "bk" if build_study(annotators) else "", out=str(path))
    Study.objects.all().delete()
    django_user_model.objects.filter(username="ann2").delete()
    out = io.StringIO()
    call_command("import_study", str(path), stdout=out)
    assert json.loads(out.getvalue()) == {"study": "bk", "items": 2, "judgments": 3, "predictions": 4, "audit": 1}
    assert not django_user_model.objects.get(username="ann2").has_usable_password()


def test_command_reports_missing_file():
    with pytest.raises(CommandError):
        call_command("import_study", "/nonexistent/backup.jsonl")
