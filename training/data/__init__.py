"""Instruction data: records, teachers and templates, generation, paraphrase, augmentation, filters, rendering,
the review store and training mixtures (Data -> Review)."""
