"""Report versions that follow every write (issue 24): the triggers of
annotate/reports/triggers.py (PostgreSQL here; SQLite's are installed after every `migrate`,
annotate/apps.py), and `ReportCache.csv`, the CSV report cached with the JSON under the
same version."""
from django.conf import settings
from django.db import migrations, models

from annotate.reports import triggers as report_triggers


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        report_triggers.install(apps, schema_editor)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        report_triggers.uninstall(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0009_reports_cache'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='reportcache',
            name='csv',
            field=models.TextField(blank=True),
        ),
        migrations.RunPython(install, uninstall),
    ]
