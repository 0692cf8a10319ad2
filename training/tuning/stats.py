"""What a training run will read, before it starts: records, sequences, tokens, trained tokens and the time it
should take (`python -m training stats`, and the Train tab's preview, as LLaMA-Factory's preview does)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the Train tab imports this module: torch comes with the first count
    from .sft import TrainConfig

# Training throughput of the embedded SmolLM2-135M with a rank-16 LoRA, float32 on this project's 2-core CPU: the
# compact round of docs/adapter.md read 277,557 tokens in 1,547 s. Every token of a sequence costs a forward and a
# backward pass, trained or masked.
TOKENS_PER_SECOND = 180.0


@dataclass(frozen=True)
class DataStats:
    records: int
    sequences: int
    tokens: int
    trained_tokens: int
    dropped: dict[str, int]
    prompt: str
    tokens_per_second: float
    epochs: float

    @property
    def seconds(self) -> float:
        """Estimated training time: every token of every sequence, each epoch, at `tokens_per_second`."""
        return self.tokens * self.epochs / self.tokens_per_second

    def as_dict(self) -> dict:
        return {**asdict(self), "tokens_per_record": round(self.tokens / max(self.records, 1), 1),
                "trained_share": round(self.trained_tokens / max(self.tokens, 1), 4), "seconds": round(self.seconds)}

    def markdown(self) -> str:
        dropped = ", ".join(f"{reason}: {n}" for reason, n in self.dropped.items()) or "none"
        minutes = self.seconds / 60
        return (f"**{self.records} records** → {self.sequences} training sequences (`{self.prompt}` prompt) · "
                f"{self.tokens:,} tokens ({self.tokens / max(self.records, 1):.0f} a record), "
                f"{self.trained_tokens:,} trained ({100 * self.trained_tokens / max(self.tokens, 1):.1f} %) · "
                f"dropped: {dropped} · about **{minutes:.0f} min** for {self.epochs:g} epoch(s) at "
                f"{self.tokens_per_second:.0f} tokens/s")


def dataset_stats(config: TrainConfig, tokens_per_second: float = TOKENS_PER_SECOND) -> DataStats:
    """The statistics of `config`'s data as `train(config)` would tokenize it (the base model's tokenizer)."""
    from visual_tools import ToolRegistry

    from .sft import build_examples, load_records, load_tokenizer
    records, _ = load_records(config.data)
    tokenizer, chat_format = load_tokenizer(config)
    rows, dropped = build_examples(records, tokenizer, chat_format, config.cutoff, ToolRegistry.from_load(),
                                   config.prompt)
    return DataStats(len(records), len(rows), sum(len(r["input_ids"]) for r in rows),
                     sum(label != -100 for r in rows for label in r["labels"]), dict(dropped), config.prompt,
                     tokens_per_second, config.epochs)
