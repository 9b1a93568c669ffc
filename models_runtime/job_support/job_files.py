"""Jobs started from the web or the API never name server paths (issue 14, item 1).

Their input files are uploaded (multipart fields named after the kind's `inputs`) and
stored in the job's own directory, HUMEVAL_JOBS_DIR/<job id>/, under names the server
chooses (`input.jsonl`); their outputs are written there too (the kind's `outputs`, e.g.
`batch.jsonl`) and downloaded from GET /api/jobs/{id}/files/<name>, where `name` must be
one of the job's own `files`. Server paths stay a feature of the management commands
(`server_paths` in the params, job_commands.py).
"""
import json
import os
import re
import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction

from ..jobs import create_job, start_job, validate_params
from ..models import Job, study_slug
from .kinds import CLI_ONLY_PARAMS, JobParamsError, get_job_kind, job_dir

# An absolute path in a text: a '/' that starts a word (not a URL's or a path's inner '/').
_SERVER_PATH = re.compile(r"(?<![\w.:/~%-])/([^\s/'\"(),;]+)[^\s'\"(),;]*")
_ROOT_DIRS: set[str] = set()


def _shorten(match: re.Match) -> str:
    """A path under one of the server's top folders (/srv, /tmp, /home, ...) -> its last
    part; anything else (an API route such as /api/jobs/1/) stays."""
    if not _ROOT_DIRS:
        _ROOT_DIRS.update(name for name in os.listdir("/") if os.path.isdir(os.path.join("/", name)))
    if match.group(1) not in _ROOT_DIRS:
        return match.group(0)
    return match.group(0).rstrip("/").rsplit("/", 1)[-1] or "/"


def redact(value):
    """`value` (JSON: a job's params, result or errors; a message) with every absolute
    server path replaced by its last part (`/srv/humeval/var/pipelines/x/batch.jsonl` ->
    `batch.jsonl`): the web and the API never show where the server keeps its files."""
    if isinstance(value, str):
        return _SERVER_PATH.sub(_shorten, value)
    if isinstance(value, dict):
        return {key: redact(v) for key, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def job_file_path(job: Job, name: str) -> Path:
    """Where one of a job's own `files` lies: a pipeline's in its study's folder
    (HUMEVAL_PIPELINE_DIR/<slug>/), any other job's in HUMEVAL_JOBS_DIR/<job id>/."""
    if job.kind == "pipeline" and isinstance(job.params, dict) and job.params.get("workdir"):
        return Path(job.params["workdir"]) / job.params["study"] / name
    return job_dir(job.pk) / name


def write_lines(path: str, lines) -> None:
    """Write JSON lines to `path` whole or not at all (a `.part` file renamed into place);
    a full disk or a missing folder is a JobParamsError naming the file and what to do."""
    tmp = f"{path}.part"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise JobParamsError(f"could not write {Path(path).name}: {exc.strerror or exc} (free disk space in its "
                             "folder, then re-run: finished items are not generated again)") from None


def input_file_name(param: str) -> str:
    return f"{param}.jsonl"


def store_upload(upload, target: Path, field: str) -> str:
    """Copy an upload (Django keeps one over FILE_UPLOAD_MAX_MEMORY_SIZE in a temporary
    file) to `target` a chunk at a time, at most HUMEVAL_MAX_UPLOAD_BYTES (the middleware
    checks the declared length; this checks the bytes). The kind's check then reads it a
    line at a time (job_inputs.py): memory stays a chunk and a line whatever the size."""
    limit = settings.HUMEVAL_MAX_UPLOAD_BYTES
    written = 0
    with open(target, "wb") as handle:
        for block in upload.chunks():
            written += len(block)
            if written > limit:
                raise JobParamsError(f"{field}: the upload is larger than {limit} bytes (HUMEVAL_MAX_UPLOAD_BYTES)")
            handle.write(block)
    return str(target)


def submit_web_job(kind: str, params: dict, uploads: dict, user=None) -> Job:
    """Check the params (no server paths), store the uploads in a new job's directory,
    validate, and start the job in the background (the workers, or a thread here).
    JobParamsError (and the kinds' configuration errors) when something is wrong: nothing
    is then left behind, neither the job row nor its directory."""
    job_kind = get_job_kind(kind)
    outputs = dict(job_kind.outputs)
    refused = sorted(name for name in params if name in job_kind.inputs or name in outputs or name in CLI_ONLY_PARAMS)
    if refused:
        upload = f"; upload {', '.join(job_kind.inputs)} as a multipart file field" if job_kind.inputs else ""
        raise JobParamsError(f"{', '.join(refused)}: the web and the API take no server paths{upload}; outputs "
                             "are written to the job's own files (GET /api/jobs/{id}/files/<name>)")
    unexpected = sorted(set(uploads) - set(job_kind.inputs))
    if unexpected:
        raise JobParamsError(f"unexpected file field(s) {', '.join(unexpected)}: {kind} takes "
                             f"{', '.join(job_kind.inputs) or 'no files'}")
    missing = [name for name in job_kind.inputs if name not in uploads]
    if missing:
        raise JobParamsError(f"upload {', '.join(missing)} as a multipart file field")
    with transaction.atomic():
        job = create_job(kind, {}, user)
        directory = job_dir(job.pk)
        shutil.rmtree(directory, ignore_errors=True)  # left by a database that was reset
        directory.mkdir(parents=True)
        try:
            paths = {}
            for name in job_kind.inputs:
                paths[name] = store_upload(uploads[name], directory / input_file_name(name), name)
            for name, file_name in outputs.items():
                paths[name] = str(directory / file_name)
            try:
                validated = validate_params(kind, dict(params, **paths))
            except ValueError as exc:  # name our files by their field, not their server path
                here = str(directory) + "/"
                renamed = JobParamsError(str(exc).replace(here, ""))
                renamed.errors = [str(e).replace(here, "") for e in getattr(exc, "errors", None) or []]
                raise renamed from exc
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        files = [input_file_name(name) for name in job_kind.inputs] + list(outputs.values())
        Job.objects.filter(pk=job.pk).update(params=validated, files=files, study=study_slug(validated))
        job.refresh_from_db()
        start_job(job, background=True)
    return job
