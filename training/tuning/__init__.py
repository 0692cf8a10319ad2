"""Tuning the controller: LoRA supervised fine-tuning (peft + transformers) and the shortlist's classifier (Train)."""
