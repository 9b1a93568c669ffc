"""Querysets compiled once: the statements of the annotator's hot endpoints (next item,
submit) are written with the ORM, so each rule keeps its one definition (who may annotate
in annotate/access.py, free and open in annotate/desk/progress.py), but are compiled to SQL
only once per database connection. Building and compiling a queryset costs Python ~10x
the database's own time for these small statements (issue 27).

`Prepared(build)` wraps a function that returns a `.values(...)` queryset from keyword
arguments. Arguments that are ints, strings or datetimes become the statement's
parameters: the first call compiles `build` with stand-in values, finds each stand-in
among the compiled parameters, and every call puts its own values in their places. Any
other argument (a bool, None) selects a separately compiled statement, as it may change
the SQL itself. Rows come back as dicts with the ORM's converters applied (JSON decoded,
SQLite datetimes parsed), as `.values()` would return them; `instance` turns the columns
of one model in such a row into a model instance.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ValuesIterable
from django.db.transaction import TransactionManagementError

STANDIN_INT = 2_000_000_000  # within every integer column's range (Django drops out-of-range lookups)
STANDIN_TIME = datetime(1901, 2, 3, tzinfo=UTC)


def _is_param(value) -> bool:
    return isinstance(value, (int, str, datetime)) and not isinstance(value, bool)


def _standin(value, n: int):
    if isinstance(value, int):
        return STANDIN_INT + n
    if isinstance(value, str):
        return f"\x1fstandin {n}\x1f"
    return STANDIN_TIME + timedelta(microseconds=n)


def _adapt(connection, value):
    """A parameter value as the compiler passes it to the driver."""
    return connection.ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value


class _Compiled:
    def __init__(self, connection, queryset: QuerySet, standins: dict):
        if queryset._iterable_class is not ValuesIterable:
            raise TypeError("Prepared statements are .values() querysets")
        query = queryset.query
        self.compiler = query.get_compiler(connection=connection)
        self.sql, params = self.compiler.as_sql()
        self.locks = bool(query.select_for_update)
        names = {_adapt(connection, standin): name for name, standin in standins.items()}
        self.slots = []  # per parameter: (argument name, None) or (None, the constant)
        for param in params:
            try:
                name = names.get(param)
            except TypeError:  # unhashable constant (a list, a JSON wrapper)
                name = None
            self.slots.append((name, None) if name else (None, param))
        missing = set(standins) - {name for name, _ in self.slots if name}
        if missing:
            raise ValueError(f"arguments {sorted(missing)} are not parameters of the compiled statement")
        self.names = (list(query.selected) if query.selected  # as ValuesIterable names them
                      else [*query.extra_select, *query.values_select, *query.annotation_select])
        selected = [column for column, _, _ in self.compiler.select[:self.compiler.col_count]]
        self.converters = self.compiler.get_converters(selected)


class Prepared:
    """One statement of a hot path; see the module docstring."""

    def __init__(self, build: Callable[..., QuerySet]):
        self.build = build
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # connection -> {shape: _Compiled}

    def compiled(self, using: str = DEFAULT_DB_ALIAS, **args) -> _Compiled:
        connection = connections[using]
        shape = tuple((name, type(value) if _is_param(value) else value) for name, value in sorted(args.items()))
        statements = self._compiled.setdefault(connection, {})
        if shape not in statements:
            standins = {name: _standin(value, n) for n, (name, value) in enumerate(args.items()) if _is_param(value)}
            statements[shape] = _Compiled(connection, self.build(**{**args, **standins}), standins)
        return statements[shape]

    def rows(self, using: str = DEFAULT_DB_ALIAS, **args) -> list[dict]:
        """The statement's rows for these argument values."""
        connection = connections[using]
        compiled = self.compiled(using, **args)
        if compiled.locks and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = [_adapt(connection, args[name]) if name else constant for name, constant in compiled.slots]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        return [dict(zip(compiled.names, row, strict=True)) for row in rows]

    def first(self, using: str = DEFAULT_DB_ALIAS, **args) -> dict | None:
        rows = self.rows(using, **args)
        return rows[0] if rows else None


def columns(model, relation: str = "") -> list[str]:
    """The `.values()` names of a model's concrete fields (reached through `relation`)."""
    return [relation + f.name for f in model._meta.concrete_fields]


def instance(model, row: dict, relation: str = "", fields: list | None = None):
    """The model instance in a `.values()` row (None when its id is NULL: an outer join
    that found nothing); fields not read stay deferred, as with `.only()`."""
    wanted = set(fields or ())
    read = [f for f in model._meta.concrete_fields if not wanted or f.name in wanted]  # from_db's order
    if row[relation + read[0].name] is None:
        return None
    return model.from_db(DEFAULT_DB_ALIAS, [f.attname for f in read], [row[relation + f.name] for f in read])
