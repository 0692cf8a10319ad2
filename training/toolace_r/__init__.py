"""ToolACE-R (arXiv 2504.01400): model-aware difficulty, iterative data selection, self-refine, BFCL evaluation."""
