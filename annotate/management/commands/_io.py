"""Shared by the import/export commands: one JSON document on stdout, errors on stderr."""
import json

from django.core.management.base import CommandError

from annotate.studies.batch_format import BatchInvalid


def run_import(command, func, path, **kwargs):
    """Run an importer on a file; print its JSON result or every `line N: ...` error."""
    try:
        with open(path, "rb") as handle:
            result = func(handle, **kwargs)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    except BatchInvalid as exc:
        for error in exc.errors:
            command.stderr.write(error)
        raise CommandError(f"{exc.total} error(s) in {path}; nothing was written", returncode=1) from None
    command.stdout.write(json.dumps(result))
