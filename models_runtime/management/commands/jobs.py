"""`manage.py jobs`: the runtime's jobs, from the command line.

    manage.py jobs [--study SLUG] [--state STATE] [--limit N]   list (newest first)
    manage.py jobs requeue ID        a failed, cancelled or stale job back to work
    manage.py jobs cancel ID         stop a job (a running one between two chunks)
    manage.py jobs show ID           the job's line and its history: why each attempt
                                     that did not finish ended (lost worker, error, cancel)
    manage.py jobs --stale [--stale-seconds N]
                                     requeue the running jobs whose heartbeat stopped
                                     (celery beat does the same every minute)

The list has one line per job: id, kind, state, progress (done/total), study, age (since
it was created) and heartbeat (since the last one), in s/m/h/d.
"""
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from models_runtime.job_support.job_history import history_lines
from models_runtime.job_support.kinds import JobParamsError
from models_runtime.jobs import cancel_job, requeue_job, requeue_stale_jobs
from models_runtime.models import Job
from models_runtime.views import ago

COLUMNS = ("id", "kind", "state", "progress", "study", "age", "heartbeat")
WIDTHS = (6, 14, 16, 11, 24, 5, 9)


def job_line(job: Job, now) -> str:
    beat = (now - job.heartbeat_at).total_seconds() if job.heartbeat_at else None
    cells = (str(job.pk), job.kind, job.state, f"{job.done}/{job.total}", job.study or "-",
             ago((now - job.created_at).total_seconds()), ago(beat))
    return " ".join(c.ljust(w) for c, w in zip(cells, WIDTHS)).rstrip()


class Command(BaseCommand):
    help = "List runtime jobs; requeue, cancel, or requeue the stale ones (--stale)."

    def add_arguments(self, parser):
        parser.add_argument("action", nargs="?", choices=["list", "requeue", "cancel", "show"], default="list")
        parser.add_argument("job_id", nargs="?", type=int)
        parser.add_argument("--study", default=None)
        parser.add_argument("--state", choices=[s for s, _ in Job.STATES], default=None)
        parser.add_argument("--limit", type=int, default=50)
        parser.add_argument("--stale", action="store_true",
                            help="requeue running jobs without a heartbeat for --stale-seconds")
        parser.add_argument("--stale-seconds", type=float, default=None,
                            help="default: HUMEVAL_JOB_STALE_SECONDS")

    def handle(self, *args, **opts):
        if opts["stale"]:
            ids = requeue_stale_jobs(opts["stale_seconds"])
            self.stdout.write(f"requeued {len(ids)} stale job(s)" + (f": {', '.join(map(str, ids))}" if ids else ""))
            return
        if opts["action"] == "list":
            self.list_jobs(opts)
            return
        if opts["job_id"] is None:
            raise CommandError(f"jobs {opts['action']} needs a job id")
        job = Job.objects.filter(pk=opts["job_id"]).first()
        if job is None:
            raise CommandError(f"no job {opts['job_id']}")
        if opts["action"] == "show":
            self.stdout.write(" ".join(c.ljust(w) for c, w in zip(COLUMNS, WIDTHS)).rstrip())
            self.stdout.write(job_line(job, timezone.now()))
            for line in history_lines(job):
                self.stdout.write(line)
            return
        try:
            job = requeue_job(job) if opts["action"] == "requeue" else cancel_job(job)
        except JobParamsError as exc:
            raise CommandError(str(exc)) from exc
        if opts["action"] == "cancel" and job.state == Job.RUNNING:
            self.stdout.write(f"job {job.pk}: cancel requested; it stops after its current chunk")
        else:
            self.stdout.write(f"job {job.pk}: {job.state} ({job.done}/{job.total} items done)")

    def list_jobs(self, opts):
        jobs = Job.objects.all()
        if opts["study"]:
            jobs = jobs.filter(study=opts["study"])
        if opts["state"]:
            jobs = jobs.filter(state=opts["state"])
        now = timezone.now()
        self.stdout.write(" ".join(c.ljust(w) for c, w in zip(COLUMNS, WIDTHS)).rstrip())
        for job in jobs.order_by("-pk")[:max(1, opts["limit"])]:
            self.stdout.write(job_line(job, now))
