"""The report's `ppi` key (statistics.md, "Prediction-powered estimates"): which human
quantities an evaluator can stand in for (quantities.py) and the key's JSON, CSV and HTML
(part.py)."""
