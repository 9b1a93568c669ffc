"""Judges and humans together (statistics.md, "Prediction-powered estimates"): PPI++ means
with power tuning, active inference with recorded sampling probabilities, and the seeded
human subset. Imports evaluation's intervals only."""
