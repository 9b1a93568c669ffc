"""What every job kind shares besides the runner (models_runtime/jobs.py): the kind
registry and job errors (kinds), the heartbeat, the job's JSON (reporting), its history of
attempts, its input files and upload checks, the management commands' submit-and-wait
helpers, and beat's stale-job check. Imports models_runtime's models, step and backends,
and humeval; never annotate (the runtime reaches it only through annotate.services)."""
