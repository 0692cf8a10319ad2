"""Data generation, review, LoRA tuning, ToolACE-R, Toolformer and evaluation (built by later issues)."""
