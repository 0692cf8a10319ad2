"""The flow from data to a tuned controller: data/ (generate, filter, augment, review store) -> tuning/ (LoRA SFT)
-> evaluation/ (GPT4Tools success rates); beside them toolace_r/, toolformer/ and ui/ (the Data, Review, Train and
Evaluate tabs)."""
