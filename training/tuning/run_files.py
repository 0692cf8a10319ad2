"""The files of a training run's folder, shared by the trainer and the Train tab (which reads them without importing
torch)."""

STOP_FILE = "STOP"  # created in the run folder by the UI's Stop button: the trainer stops and saves
LOG_FILE = "trainer_log.jsonl"
ADAPTER_DIR = "adapter"
META_FILE = "toolsmith.json"  # beside the adapter: its base, the data hash, the settings, the results
