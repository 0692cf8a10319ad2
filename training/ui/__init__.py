"""The training package's tabs: Data and Review (Train and Evaluate come with their issues)."""
from .data_tab import build_data_tab
from .review_tab import HOTKEYS, build_review_tab

__all__ = ["build_data_tab", "build_review_tab", "HOTKEYS"]
