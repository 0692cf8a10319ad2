"""Training throughput: our path (length-grouped batches, each padded to its own longest example) against a
plain transformers Trainer + peft that pads every example to the longest one, same data, model and run.

    python bench/train_throughput.py [--base embedded] [--examples 24] [--batch-size 4]

Prints a table of real (non-pad) tokens per second and the ratio (target: >= 1.0x); each path runs
`--repeats` times, alternating, after one warm-up run, and the best time counts.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer,  # noqa: E402
                          TrainingArguments)

from agent.chat_format import resolve_chat_format  # noqa: E402
from training.data.generate import build_dataset  # noqa: E402
from training.data.records import load_jsonl  # noqa: E402
from training.tuning.sft import TrainConfig, base_checkpoint, build_examples, make_trainer  # noqa: E402
from training.data.teachers import TemplateTeacher  # noqa: E402
from visual_tools import ToolRegistry  # noqa: E402

ASSETS = Path(__file__).resolve().parent.parent / "assets"
OFFLINE = "Image2Canny_cpu,Image2Line_cpu,Image2Scribble_cpu,Image2Pose_cpu,CropImage_cpu,TextDetection_cpu"


def lora_model(source: str):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(source)
    return get_peft_model(model, LoraConfig(r=16, lora_alpha=16, lora_dropout=0.05, task_type="CAUSAL_LM",
                                            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))


def timed(trainer: Trainer) -> float:
    started = time.perf_counter()
    trainer.train()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="embedded")
    parser.add_argument("--examples", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per path (the best is reported)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    registry = ToolRegistry.from_load(OFFLINE)
    build_dataset(ASSETS, TemplateTeacher(), registry, work / "data.jsonl", n=60, per_call=12, offer=3)
    source, _ = base_checkpoint(args.base)
    tokenizer = AutoTokenizer.from_pretrained(source)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    rows, _ = build_examples(load_jsonl(work / "data.jsonl").records, tokenizer,
                             resolve_chat_format(tokenizer, "auto"), 4096, ToolRegistry.from_load())
    rows = rows[:args.examples]
    real_tokens = sum(len(r["input_ids"]) for r in rows)
    longest = max(len(r["input_ids"]) for r in rows)
    steps = len(rows) // args.batch_size
    config = TrainConfig(data="", out=str(work / "ours"), max_steps=steps, batch_size=args.batch_size,
                         save_steps=10 ** 6)

    from datasets import Dataset
    plain_args = TrainingArguments(output_dir=str(work / "plain"), max_steps=steps, learning_rate=3e-4,
                                   per_device_train_batch_size=args.batch_size, logging_steps=1, save_strategy="no",
                                   report_to="none", disable_tqdm=True, dataloader_pin_memory=False, seed=0)

    def ours_trainer() -> Trainer:
        return make_trainer(lora_model(source), tokenizer, rows, config, work / "ours")

    def plain_trainer() -> Trainer:
        return Trainer(model=lora_model(source), args=plain_args, train_dataset=Dataset.from_list(rows),
                       data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100,
                                                            padding="max_length", max_length=longest))

    timed(plain_trainer())  # warm-up: the first run in a process pays for allocations and lazy imports
    times: dict[str, list[float]] = {"ours": [], "plain": []}
    for _ in range(args.repeats):  # alternate, so drift on a noisy machine hits both
        times["plain"].append(timed(plain_trainer()))
        times["ours"].append(timed(ours_trainer()))
    ours, baseline = min(times["ours"]), min(times["plain"])

    print(f"{len(rows)} examples, {real_tokens} real tokens (mean {real_tokens / len(rows):.0f}, longest {longest}),"
          f" batch {args.batch_size}, {steps} steps, torch threads {torch.get_num_threads()}, best of "
          f"{args.repeats} alternating runs after a warm-up\n")
    print("| path | seconds | real tokens/s |\n|---|---|---|")
    print(f"| plain Trainer + peft, padded to the longest example | {baseline:.1f} | {real_tokens / baseline:.1f} |")
    print(f"| ours: length-grouped, padded per batch | {ours:.1f} | {real_tokens / ours:.1f} |")
    print(f"\nspeed-up: {baseline / ours:.2f}x")


if __name__ == "__main__":
    main()
