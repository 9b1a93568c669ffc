"""Several outputs on one screen (statistics.md, "Best-worst and listwise ranking") and
test-retest repeats: best-worst counting scores and tuple designs, Plackett-Luce strengths
and Kendall's W, the answer checks these screens need, and retest agreement. Imports
evaluation's shared pieces (ranking, bootstrap, intervals, agreement) only."""
