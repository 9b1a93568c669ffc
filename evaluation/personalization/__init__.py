"""Measures of personalization: EGISES/DEGRESS and JSD (iCOPERNICUS), its paradoxes, and
the implicit-personalization effect of a cue. Imports evaluation's shared pieces only."""
