"""LoRA supervised fine-tuning of the controller on records: transformers' Trainer + peft, no loop of our own.

A record is rendered by agent/prompts.py in the adapter's template and formatted exactly as the controller formats
prompts at inference (chat template, Vicuna or raw): with `compact` one sequence per record (every step and the
answer), with `gpt4tools` one example per step. Labels cover only the model's own text — Thought/Action/Action
Input and final answers; the prompt, the given steps and every Observation are masked (-100).
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainerCallback,
                          TrainingArguments)

from agent.chat_format import format_prompt, resolve_chat_format
from agent.hf_controller import fingerprint
from agent.prompts import DEFAULT_TEMPLATE, THOUGHT_NO, THOUGHT_YES, Prompt, render_final
from visual_tools import ToolRegistry

from ..data.filters import check
from ..data.records import Record, load_jsonl
from ..data.render import Segment, sequences
from .run_files import ADAPTER_DIR, LOG_FILE, META_FILE, STOP_FILE



class TrainingError(ValueError):
    """Training cannot start (no valid records, missing base model, bad settings); nothing was written."""


@dataclass
class TrainConfig:
    data: str
    out: str
    base: str = "embedded"
    epochs: float = 3.0
    learning_rate: float = 3e-4
    lora_r: int = 16
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    cutoff: int = 2048
    batch_size: int = 4
    grad_accum: int = 1
    max_steps: int = -1
    save_steps: int = 50
    warmup_ratio: float = 0.03
    seed: int = 0
    chat_format: str = "auto"
    sampling: str = "group_by_length"  # length-grouped batches pad little; "random" for plain shuffling
    load_in_8bit: bool = False
    load_in_4bit: bool = False
    resume: bool = False
    init_adapter: str | None = None  # continue training this LoRA adapter instead of starting a new one
    bf16: bool = False  # bfloat16 autocast on the CPU too (~1.8x on a CPU with AVX512-BF16); always on a bf16 GPU
    decision_weight: float = 1.0  # loss weight of the Yes / No after "Do I need to use a tool?" (1: plain loss)
    prompt: str = DEFAULT_TEMPLATE  # the prompt template (agent/prompts.py); recorded in toolsmith.json


def base_checkpoint(base: str) -> tuple[str, str]:
    """(where to load from, the name to record): `embedded` is the converted SmolLM2 shipped in a wheel."""
    if base == "embedded":
        from agent.embedded import HUB_ID, embedded_checkpoint
        return embedded_checkpoint(), HUB_ID
    if base.startswith(("/", ".", "~")) and not Path(base).expanduser().exists():
        raise TrainingError(f"base model folder '{base}' does not exist")
    return base, base


def load_records(data: str) -> tuple[list[Record], str]:
    """Records from a JSONL file, or `review:accepted` (the review store's accepted records); and their hash."""
    if data.startswith("review:"):
        from ..data.review_store import Filters, ReviewStore
        records = ReviewStore.default().records(Filters(status=data.split(":", 1)[1] or "accepted"))
        digest = hashlib.sha256("".join(r.model_dump_json() for r in records).encode()).hexdigest()
        return records, digest
    path = Path(data)
    if not path.is_file():
        raise TrainingError(f"no such data file: {data}")
    records = load_jsonl(path).records
    return records, hashlib.sha256(path.read_bytes()).hexdigest()


def encode_example(tokenizer, prompt: str, completion: str, chat_format: str) -> dict[str, list[int]]:
    """One tokenized example: the formatted prompt masked (-100), the completion learned."""
    return encode_sequence(tokenizer, prompt, [Segment(completion, True)], chat_format)


def encode_sequence(tokenizer, prompt: Prompt | str, pieces: list[Segment], chat_format: str) -> dict[str, list[int]]:
    """One tokenized sequence: the formatted prompt (with its reply so far) masked, then `pieces`, each trained or
    masked; a reply whose last piece is trained and does not stop at an Observation ends the turn with EOS. The
    whole text is tokenized at once, as the controller tokenizes it at inference, and labels follow the characters."""
    text = format_prompt(tokenizer, prompt, chat_format)
    spans = []
    for piece in pieces:
        if piece.trained:
            spans.append((len(text), len(text) + len(piece.text)))
        text += piece.text
    encoded = tokenizer(text, add_special_tokens=resolve_chat_format(tokenizer, chat_format) != "chat",
                        return_offsets_mapping=True)
    ids = encoded["input_ids"]
    labels = [token if any(start <= begin < end for start, end in spans) else -100
              for token, (begin, _) in zip(ids, encoded["offset_mapping"])]
    last = pieces[-1] if pieces else None
    if last and last.trained and not last.text.endswith("Observation:") and tokenizer.eos_token_id is not None:
        ids, labels = ids + [tokenizer.eos_token_id], labels + [tokenizer.eos_token_id]
    return {"input_ids": ids, "labels": labels}


def build_examples(records: list[Record], tokenizer, chat_format: str, cutoff: int, registry: ToolRegistry,
                   template: str = DEFAULT_TEMPLATE) -> tuple[list[dict], Counter]:
    """Tokenized sequences with masked labels, and a count of what was dropped and why."""
    dropped: Counter = Counter()
    rows = []
    for record in records:
        problem = check(record, registry)
        if problem and problem != "missing image":  # training reads the text, not the photo
            dropped[problem] += 1
            continue
        for prompt, pieces in sequences(record, registry.tools, template):
            row = encode_sequence(tokenizer, prompt, pieces, chat_format)
            if len(row["input_ids"]) > cutoff:
                dropped["longer than cutoff"] += 1
                continue
            rows.append(row)
    return rows, dropped


class JsonlLog(TrainerCallback):
    """Progress, loss, learning rate and ETA as JSON lines (the Train tab reads them); a STOP file stops."""

    def __init__(self, run_dir: Path):
        self.path, self.stop = run_dir / LOG_FILE, run_dir / STOP_FILE
        self.started = time.monotonic()
        self.first_step = 0

    def write(self, **entry) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps({"time": time.time(), **entry}) + "\n")

    def on_train_begin(self, args, state, control, **kwargs):
        self.started, self.first_step = time.monotonic(), state.global_step
        if state.is_world_process_zero:  # under `accelerate launch`, one process writes the log
            self.write(event="start", step=state.global_step, max_steps=state.max_steps)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero:
            return
        done = state.global_step - self.first_step
        rate = (time.monotonic() - self.started) / done if done else 0.0
        self.write(**{**(logs or {}), "event": "log", "step": state.global_step, "max_steps": state.max_steps,
                      "epoch": state.epoch, "percentage": round(100 * state.global_step / max(state.max_steps, 1), 2),
                      "elapsed": round(time.monotonic() - self.started, 1),
                      "eta": round(rate * (state.max_steps - state.global_step), 1)})

    def on_step_end(self, args, state, control, **kwargs):
        if self.stop.exists():
            control.should_training_stop = True
            control.should_save = True


def decision_tokens(tokenizer) -> tuple[int, list[int]]:
    """The token ending GPT4Tools' question ("... a tool?") and the tokens of its two answers, Yes and No."""
    yes, no = (tokenizer(render_final("", thought), add_special_tokens=False)["input_ids"]
               for thought in (THOUGHT_YES, THOUGHT_NO))
    common = next(i for i, (a, b) in enumerate(zip(yes, no)) if a != b)
    return yes[common - 1], [yes[common], no[common]]


def decision_weighted_loss(tokenizer, weight: float) -> Callable:
    """Causal LM loss in which each Yes / No answering "Do I need to use a tool?" counts `weight` times: that one token
    decides whether a tool is called, or a chain goes on after an Observation, and is 1 of ~40 tokens otherwise.
    (transformers' loss has no per-token weights, hence this.)"""
    question, answers = decision_tokens(tokenizer)

    def loss(outputs, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
        logits, target, previous = outputs.logits[:, :-1].float(), labels[:, 1:], labels[:, :-1]
        token_loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, ignore_index=-100,
                                                       reduction="none")
        decision = torch.isin(target, torch.tensor(answers, device=target.device)) & (previous == question)
        weights = (target != -100).float() + (weight - 1) * decision.float()
        count = num_items_in_batch if num_items_in_batch is not None else (target != -100).sum()
        return (token_loss * weights).sum() / count
    return loss


def make_trainer(model, tokenizer, rows: list[dict], config: TrainConfig, run_dir: Path,
                 callbacks: list[TrainerCallback] = ()) -> Trainer:
    """Our training path: length-grouped batches padded only to their own longest example."""
    from datasets import Dataset
    args = TrainingArguments(
        output_dir=str(run_dir / "checkpoints"), num_train_epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.grad_accum, warmup_steps=config.warmup_ratio,
        lr_scheduler_type="cosine", logging_steps=1, save_strategy="steps", save_steps=config.save_steps,
        save_total_limit=2, seed=config.seed, report_to="none", train_sampling_strategy=config.sampling,
        disable_tqdm=True, bf16=config.bf16 or (torch.cuda.is_available() and torch.cuda.is_bf16_supported()),
        use_cpu=config.bf16 and not torch.cuda.is_available(),  # transformers' CPU autocast asks for it by name
        dataloader_pin_memory=False)
    weighted = decision_weighted_loss(tokenizer, config.decision_weight) if config.decision_weight != 1 else None
    return Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows), callbacks=list(callbacks),
                   data_collator=DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100, padding=True),
                   compute_loss_func=weighted)


def model_card(meta: dict) -> str:
    c = meta["config"]
    return (f"---\nbase_model: {meta['base']}\nlibrary_name: peft\ntags: [lora, gpt4tools, toolsmith]\n---\n\n"
            f"# Toolsmith controller LoRA\n\nA LoRA adapter for `{meta['base']}` that answers in GPT4Tools' "
            f"Thought / Action / Action Input / Observation format, trained with `python -m training train`.\n\n"
            f"- data: `{Path(meta['data']).name}` (sha256 `{meta['data_sha256'][:16]}…`), {meta['records']} records, "
            f"{meta['examples']} training sequences\n- LoRA r {c['lora_r']}, alpha {c['lora_alpha']}, dropout "
            f"{c['lora_dropout']} on {', '.join(c['target_modules'])}; lr {c['learning_rate']}, "
            f"{c['epochs']} epochs, batch {c['batch_size']}, {meta['global_step']} steps; final train loss "
            f"{meta['train_loss']:.4f}\n- prompt template: {meta.get('prompt', DEFAULT_TEMPLATE)}, format: "
            f"{meta['chat_format']}; loss on the model's own text only "
            f"(prompt and observations masked)\n")


def last_checkpoint(run_dir: Path) -> str | None:
    """The newest complete checkpoint; one cut short by a crash (no trainer_state.json yet) is skipped."""
    complete = [p for p in (run_dir / "checkpoints").glob("checkpoint-*") if (p / "trainer_state.json").is_file()]
    return str(max(complete, key=lambda p: int(p.name.rsplit("-", 1)[1]))) if complete else None


def load_tokenizer(config: TrainConfig):
    """The base model's tokenizer (with a pad token) and the prompt format resolved for it; bad settings raise."""
    if (config.load_in_8bit or config.load_in_4bit) and not torch.cuda.is_available():
        raise TrainingError("--load-in-8bit/4bit needs a CUDA GPU and bitsandbytes (pip install -e '.[gpu]')")
    source, _ = base_checkpoint(config.base)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise TrainingError(f"cannot load base model '{config.base}': {exc}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, resolve_chat_format(tokenizer, config.chat_format)


def train(config: TrainConfig) -> Path:
    """Train a LoRA adapter on records; returns its folder (`<out>/adapter`), with `toolsmith.json` beside it."""
    records, digest = load_records(config.data)
    tokenizer, chat_format = load_tokenizer(config)
    registry = ToolRegistry.from_load()
    rows, dropped = build_examples(records, tokenizer, chat_format, config.cutoff, registry, config.prompt)
    if not rows:
        reasons = ", ".join(f"{k}: {v}" for k, v in dropped.items()) or "the file holds no records"
        raise TrainingError(f"no valid training examples in {config.data} ({len(records)} records; {reasons})")

    def shortlist_classifier(adapter: Path) -> None:  # the shortlist this adapter's prompts are offered by
        from agent.shortlist import RETRIEVER_DIR
        from .retriever import train_retriever
        train_retriever(records, registry, adapter / RETRIEVER_DIR, data=config.data)

    return fit(config, tokenizer, rows, {"chat_format": chat_format, "prompt": config.prompt, "data_sha256": digest,
                                         "records": len(records), "dropped": dict(dropped)}, model_card,
               shortlist_classifier)


def native_cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX); elsewhere torch emulates it, slowly."""
    cpu = torch.cpu
    return any(getattr(cpu, name, lambda: False)() for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"))


def fit(config: TrainConfig, tokenizer, rows: list[dict], meta: dict, card: Callable[[dict], str],
        beside: Callable[[Path], None] | None = None) -> Path:
    """LoRA-tune the base on tokenized `rows`; save the adapter, `toolsmith.json` (`meta` + results), `card`, and
    what `beside(adapter folder)` saves there, before the run is logged done."""
    from peft import LoraConfig, get_peft_model

    run_dir = Path(config.out)
    if config.bf16 and not torch.cuda.is_available() and not native_cpu_bf16():
        print("warning: --bf16 on this CPU is emulated (no AVX512-BF16 or AMX): several times slower than "
              "float32; leave --bf16 out here", file=sys.stderr)
    if config.init_adapter and not (Path(config.init_adapter) / "adapter_config.json").is_file():
        raise TrainingError(f"--init-adapter: no LoRA adapter (adapter_config.json) in {config.init_adapter}")
    source, base_name = base_checkpoint(config.base)
    quantized = config.load_in_8bit or config.load_in_4bit
    quantization = None
    if quantized:
        from transformers import BitsAndBytesConfig
        quantization = BitsAndBytesConfig(load_in_8bit=config.load_in_8bit, load_in_4bit=config.load_in_4bit,
                                          bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(source, quantization_config=quantization,
                                                 dtype=torch.bfloat16 if torch.cuda.is_available() else None)
    if quantized:
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(model)
    if config.init_adapter:
        from peft import PeftModel
        model = PeftModel.from_pretrained(model, config.init_adapter, is_trainable=True)
    else:
        model = get_peft_model(model, LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                                                 lora_dropout=config.lora_dropout, target_modules=config.target_modules,
                                                 task_type="CAUSAL_LM"))
    run_dir.mkdir(parents=True, exist_ok=True)
    log = JsonlLog(run_dir)
    (run_dir / STOP_FILE).unlink(missing_ok=True)
    trainer = make_trainer(model, tokenizer, rows, config, run_dir, callbacks=[log])
    result = trainer.train(resume_from_checkpoint=last_checkpoint(run_dir) if config.resume else None)
    adapter_dir = run_dir / ADAPTER_DIR
    if not trainer.is_world_process_zero():
        return adapter_dir
    model.save_pretrained(adapter_dir)
    (adapter_dir / "adapter_config.json").write_text(json.dumps(
        {**json.loads((adapter_dir / "adapter_config.json").read_text()), "base_model_name_or_path": base_name},
        indent=2))
    meta = {"base": base_name, "base_fingerprint": fingerprint(model.config), "data": config.data, **meta,
            "examples": len(rows), "global_step": trainer.state.global_step, "train_loss": result.training_loss,
            "stopped_early": (run_dir / STOP_FILE).exists(), "config": asdict(config)}
    (adapter_dir / META_FILE).write_text(json.dumps(meta, indent=2))
    (adapter_dir / "README.md").write_text(card(meta))  # instead of peft's blank template
    if beside is not None:
        beside(adapter_dir)
    log.write(event="done", step=trainer.state.global_step, max_steps=trainer.state.max_steps,
              adapter=str(adapter_dir), train_loss=result.training_loss)
    return adapter_dir
