"""Jobs started from the web or the API never name server paths (issue 14, item 1).

Their input files are uploaded (multipart fields named after the kind's `inputs`) and
stored in the job's own directory, HUMEVAL_JOBS_DIR/<job id>/, under names the server
chooses (`input.jsonl`); their outputs are written there too (the kind's `outputs`, e.g.
`batch.jsonl`) and downloaded from GET /api/jobs/{id}/files/<name>, where `name` must be
one of the job's own `files`. Server paths stay a feature of the management commands
(`server_paths` in the params, job_commands.py).
"""
import shutil

from django.db import transaction

from .jobs import (
    CLI_ONLY_PARAMS,
    JobParamsError,
    create_job,
    get_job_kind,
    job_dir,
    start_job,
    validate_params,
)
from .models import Job, study_slug


def input_file_name(param: str) -> str:
    return f"{param}.jsonl"


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
                target = directory / input_file_name(name)
                with open(target, "wb") as handle:
                    for block in uploads[name].chunks():
                        handle.write(block)
                paths[name] = str(target)
            for name, file_name in outputs.items():
                paths[name] = str(directory / file_name)
            try:
                validated = validate_params(kind, dict(params, **paths))
            except ValueError as exc:  # name our files by their field, not their server path
                raise JobParamsError(str(exc).replace(str(directory) + "/", "")) from exc
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        files = [input_file_name(name) for name in job_kind.inputs] + list(outputs.values())
        Job.objects.filter(pk=job.pk).update(params=validated, files=files, study=study_slug(validated))
        job.refresh_from_db()
        start_job(job, background=True)
    return job
