"""A ToolACE-R run's settings and log file, apart from the loop (training/toolace_r/iterate.py) so that the Train
tab checks and reads runs without importing torch."""
from __future__ import annotations

from dataclasses import dataclass

LOG_FILE = "toolace_log.jsonl"


@dataclass
class Settings:
    iters: int = 3
    alpha: float = 0.0
    beta: float = 0.9
    k: int = 8
    temperature: float = 1.0
    max_new_tokens: int = 96
    refine_data: bool = True  # each kept sample also as a two-turn self-refine sample
    patience: int = 0  # iterations in a row without a better dev score before stopping (0: stop at the first)

    def check(self) -> None:
        if not 0 <= self.alpha < self.beta <= 1:
            raise ValueError(f"need 0 <= alpha < beta <= 1 (got alpha {self.alpha}, beta {self.beta}): "
                             "samples are kept when alpha < D < beta")
        if self.k < 1 or self.iters < 1 or self.patience < 0:
            raise ValueError("k and the number of iterations must be at least 1, the patience at least 0")
