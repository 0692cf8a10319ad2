"""Instruction data (generation, filtering, augmentation, review), LoRA tuning and GPT4Tools evaluation;
ToolACE-R and Toolformer come with their issues."""
