"""The `done_with_errors` job state: a job whose every item finished but some with an
error is no longer reported as plain `done`; past jobs of that shape are relabelled."""
from django.db import migrations, models


def relabel(apps, schema_editor):
    Job = apps.get_model("models_runtime", "Job")
    Job.objects.filter(state="done", n_errors__gt=0).update(state="done_with_errors")


def unlabel(apps, schema_editor):
    Job = apps.get_model("models_runtime", "Job")
    Job.objects.filter(state="done_with_errors").update(state="done")


class Migration(migrations.Migration):

    dependencies = [
        ("models_runtime", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="state",
            field=models.CharField(choices=[("queued", "queued"), ("running", "running"), ("done", "done"),
                                            ("done_with_errors", "done_with_errors"), ("failed", "failed")],
                                   default="queued", max_length=16),
        ),
        migrations.RunPython(relabel, unlabel),
    ]
