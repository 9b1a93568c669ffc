from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate, pre_migrate

TRIGGER_TABLES = ("annotate_study", "annotate_item", "annotate_judgment", "annotate_prediction")


def _sqlite_with_tables(using):
    """The connection `using` when it is SQLite and holds the report tables, else None."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return None
    return connection if set(TRIGGER_TABLES) <= set(connection.introspection.table_names()) else None


def drop_sqlite_report_triggers(sender, using="default", apps=None, **kwargs):
    """Before `migrate` on SQLite: a table copy must not meet a trigger naming its table
    (annotate/reports/triggers.py)."""
    from django.apps import apps as global_apps

    from annotate.reports import triggers as report_triggers

    connection = _sqlite_with_tables(using)
    if connection is not None:
        with connection.schema_editor() as editor:
            report_triggers.uninstall(apps or global_apps, editor)


def install_sqlite_report_triggers(sender, using="default", apps=None, **kwargs):
    """After `migrate` on SQLite: the triggers again, for the tables as they are now."""
    from django.apps import apps as global_apps

    from annotate.reports import triggers as report_triggers

    connection = _sqlite_with_tables(using)
    if connection is not None:
        with connection.schema_editor() as editor:
            report_triggers.uninstall(apps or global_apps, editor)
            report_triggers.install(apps or global_apps, editor)


class AnnotateConfig(AppConfig):
    default_auto_field = 'django.db.models.BigAutoField'
    name = 'annotate'

    def ready(self):
        from humeval import checks  # noqa: F401  (registers the deployment checks)

        pre_migrate.connect(drop_sqlite_report_triggers, sender=self)
        post_migrate.connect(install_sqlite_report_triggers, sender=self)
