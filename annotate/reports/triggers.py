"""Report versions that follow every write (issue 24; docs/reports.md, "Cache").

Database triggers bump `Study.report_revision` whenever a judgment, prediction or item of
the study is updated in place or deleted, however it was written: the admin, a shell
`QuerySet.update()`, an import, the API (model signals miss queryset updates and raw SQL).
New rows need no trigger: they change the row counts and highest ids that the data
version reads, so the submit path takes no extra lock on the study row. Item updates that
only move the assignment engine's counters (`n_assigned`, `n_completed`) are not changes
of the study's data and bump nothing. Renaming a user bumps the studies they judged (the
report names annotators). Study settings are in the version's settings digest.

PostgreSQL: one statement-level trigger per table and operation (transition tables), so a
bulk update of 100k rows bumps each study once; installed by migration 0010 (ALTER TABLE
keeps them). SQLite (the development default): row-level triggers, filtered with WHEN. A
SQLite migration that changes one of these tables copies it into a new table, which would
lose its triggers, and a trigger naming a table being copied makes the copy fail; so on
SQLite they are dropped before `migrate` and installed again after it (annotate/apps.py).
"""
from django.conf import settings

ROWS = ("annotate_judgment", "annotate_prediction")
ITEM = "annotate_item"
COUNTERS = ("n_assigned", "n_completed")
BUMP = "UPDATE annotate_study SET report_revision = report_revision + 1 WHERE id IN"

PG_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION humeval_report_rows_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {BUMP} (SELECT study_id FROM old_rows UNION SELECT study_id FROM new_rows);
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION humeval_report_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {BUMP} (SELECT DISTINCT study_id FROM old_rows);
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION humeval_report_items_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {BUMP} (SELECT unnest(ARRAY[o.study_id, n.study_id]) FROM old_rows o JOIN new_rows n ON n.id = o.id
          WHERE (to_jsonb(o) - '{COUNTERS[0]}' - '{COUNTERS[1]}')
                IS DISTINCT FROM (to_jsonb(n) - '{COUNTERS[0]}' - '{COUNTERS[1]}'));
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION humeval_report_user_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {BUMP} (SELECT DISTINCT j.study_id FROM annotate_judgment j WHERE j.annotator_id IN
          (SELECT n.id FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE n.username IS DISTINCT FROM o.username));
  RETURN NULL;
END $$;
"""


def _pg_trigger(name, table, operation, function):
    tables = "OLD TABLE AS old_rows" + (" NEW TABLE AS new_rows" if operation == "UPDATE" else "")
    return (f"CREATE TRIGGER {name} AFTER {operation} ON {table} REFERENCING {tables} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}();")


def _item_columns(apps):
    """The item columns whose change is a change of the study's data (all but the counters)."""
    item = apps.get_model("annotate", "Item")
    return [f.column for f in item._meta.concrete_fields if f.column not in COUNTERS and f.column != "id"]


def _triggers(apps, vendor, user_table):
    """[(trigger name, table, CREATE statement)] for `vendor`."""
    out = []
    if vendor == "postgresql":
        for table in ROWS:
            out.append((f"{table}_report_upd", table,
                        _pg_trigger(f"{table}_report_upd", table, "UPDATE", "humeval_report_rows_updated")))
            out.append((f"{table}_report_del", table,
                        _pg_trigger(f"{table}_report_del", table, "DELETE", "humeval_report_rows_deleted")))
        out.append((f"{ITEM}_report_upd", ITEM,
                    _pg_trigger(f"{ITEM}_report_upd", ITEM, "UPDATE", "humeval_report_items_updated")))
        out.append((f"{ITEM}_report_del", ITEM,
                    _pg_trigger(f"{ITEM}_report_del", ITEM, "DELETE", "humeval_report_rows_deleted")))
        out.append(("humeval_user_report_upd", user_table,
                    _pg_trigger("humeval_user_report_upd", user_table, "UPDATE", "humeval_report_user_renamed")))
        return out
    changed = " OR ".join(f'OLD."{c}" IS NOT NEW."{c}"' for c in _item_columns(apps))
    for table in ROWS + (ITEM,):
        when = f" WHEN {changed}" if table == ITEM else ""
        out.append((f"{table}_report_upd", table,
                    f"CREATE TRIGGER {table}_report_upd AFTER UPDATE ON {table} FOR EACH ROW{when} BEGIN "
                    f"{BUMP} (OLD.study_id, NEW.study_id); END;"))
        out.append((f"{table}_report_del", table,
                    f"CREATE TRIGGER {table}_report_del AFTER DELETE ON {table} FOR EACH ROW BEGIN "
                    f"{BUMP} (OLD.study_id); END;"))
    out.append(("humeval_user_report_upd", user_table,
                f"CREATE TRIGGER humeval_user_report_upd AFTER UPDATE OF username ON {user_table} FOR EACH ROW "
                f"WHEN OLD.username IS NOT NEW.username BEGIN "
                f"{BUMP} (SELECT study_id FROM annotate_judgment WHERE annotator_id = NEW.id); END;"))
    return out


def _user_table(apps):
    return apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table


def install(apps, schema_editor):
    """Creates the triggers of this database (PostgreSQL, SQLite; others have none)."""
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        return
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTIONS)
    for _, _, sql in _triggers(apps, vendor, _user_table(apps)):
        schema_editor.execute(sql)


def uninstall(apps, schema_editor):
    """Drops them (IF EXISTS: safe when they are not there)."""
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        return
    for name, table, _ in _triggers(apps, vendor, _user_table(apps)):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}" + (f" ON {table}" if vendor == "postgresql" else ""))
    if vendor == "postgresql":
        for function in ("humeval_report_rows_updated", "humeval_report_rows_deleted",
                         "humeval_report_items_updated", "humeval_report_user_renamed"):
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
