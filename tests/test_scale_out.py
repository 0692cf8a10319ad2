"""Scale-out as far as one CPU allows: the shipped `accelerate launch` configs (data-parallel LoRA, DeepSpeed ZeRO-2)
run the LoRA trainer with one process, and the adapter they save loads like any other."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_sft import records

from agent.hf_controller import TransformersController
from training.data.records import save_jsonl

ROOT = Path(__file__).resolve().parent.parent
ACCELERATE = Path(sys.executable).parent / "accelerate"  # the console script of the same environment


@pytest.mark.parametrize("config, extra, optimizer_state", [
    ("multi_gpu.yaml", ["--cpu"], "optimizer.pt"),  # torch's own
    ("zero2.yaml", [], "global_step2/*zero_pp_rank_0_*optim_states.pt"),  # sharded by DeepSpeed ZeRO
], ids=["data-parallel", "deepspeed-zero2"])
def test_accelerate_launch_config_trains_with_one_process(config, extra, optimizer_state, tiny_llama, tmp_path):
    data, run = save_jsonl(records(), tmp_path / "train.jsonl"), tmp_path / "run"
    done = subprocess.run(
        [str(ACCELERATE), "launch", "--config_file", f"training/configs/{config}", "--num_processes", "1", *extra,
         "-m", "training", "train", "--data", str(data), "--base", str(tiny_llama), "--out", str(run),
         "--max-steps", "4", "--save-steps", "2", "--batch-size", "2", "--lr", "5e-3", "--cutoff", "100000"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in (run / "trainer_log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in events if e["event"] == "log" and "loss" in e] == [1, 2, 3, 4]
    meta = json.loads((run / "adapter" / "toolsmith.json").read_text())
    assert meta["global_step"] == 4
    assert list((run / "checkpoints" / "checkpoint-2").glob(optimizer_state))
    controller = TransformersController.from_pretrained(str(tiny_llama), adapter=str(run / "adapter"))
    assert isinstance(controller.generate("hello", max_new_tokens=4)[0], str)
