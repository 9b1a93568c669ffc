from django.apps import AppConfig


class ModelsRuntimeConfig(AppConfig):
    default_auto_field = 'django.db.models.BigAutoField'
    name = 'models_runtime'

    def ready(self):
        """Register the runtime's job kinds: each module defines its JobKind, this is the
        one list of them (a new kind = one module + one line here)."""
        from . import icopernicus, pipeline, rag, scoring
        from .ip import job as ip_job
        from .job_support.kinds import register
        from .judges import jobs as judge_jobs

        for kind in (scoring.SCORE, rag.RAG, icopernicus.ICOPERNICUS, judge_jobs.PERSE, judge_jobs.EXPERT,
                     judge_jobs.EXPERT_BATCH, judge_jobs.PROBES, pipeline.PIPELINE,
                     pipeline.PLAN_GENERATE, ip_job.IP):
            register(kind)
