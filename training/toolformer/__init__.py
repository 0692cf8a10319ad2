"""Toolformer (Schick et al. 2023) for the five text tools: annotate a corpus with calls, fine-tune, decode."""
