"""The training package's tabs: Data, Review, Train (LoRA, ToolACE-R, Toolformer) and Evaluate."""
from .data_tab import build_data_tab
from .evaluate_tab import build_evaluate_tab
from .review_tab import HOTKEYS, build_review_tab
from .toolace_tab import build_toolace_tab
from .toolformer_tab import build_toolformer_tab
from .train_tab import TrainTab, build_train_tab

__all__ = ["build_data_tab", "build_review_tab", "build_train_tab", "build_toolformer_tab", "build_toolace_tab",
           "build_evaluate_tab", "HOTKEYS", "TrainTab"]
