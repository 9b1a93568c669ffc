"""Implicit-personalization probes (runtime.md "Implicit personalization probes"): the probe
file format (probes.py), the `ip` plan section (plan.py), the resumable `ip` job (job.py)
and its optional human side, an alignment study (the runtime's ALIGNMENT_KIND) of the cue-conditioned answers
(study.py). The statistics are plain functions in evaluation/personalization/ip_effect.py."""
