"""The pieces a study plan (models_runtime/plans.py) is checked and shown with: the plan's
checks and file resolution, the judges and study kinds a plan may name, "did you mean"
suggestions, and the plan page. Imports models_runtime's jobs, metrics and backends;
plans.py and pipeline.py import this room, never the other way round."""
