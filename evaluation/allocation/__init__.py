"""Adaptive pair allocation (statistics.md, "Adaptive allocation"): which system pair to
show next and inverse-probability-weighted win rates, plus the simulator its benchmark
uses. Imports evaluation.bradley_terry and evaluation's bootstrap helpers only."""
