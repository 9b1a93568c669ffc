"""Several outputs on one screen (statistics.md, the best-worst and listwise section) and
test-retest repeats: best-worst counting scores and tuple designs, Plackett-Luce strengths
and Kendall's W, the answer checks these screens need, and retest agreement. Imports
evaluation's shared pieces (Bradley–Terry, bootstrap, intervals, agreement) only."""
