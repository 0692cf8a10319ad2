"""LoRA SFT: masked labels, a real (tiny) training run through the CLI, resume after a kill, bad input."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from agent.controller import ControllerError
from agent.hf_controller import TransformersController
from training.data.records import GoldStep, Record, Source, save_jsonl
from training.tuning.sft import TrainConfig, TrainingError, build_examples, decision_weighted_loss, train
from visual_tools import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ["Edge Detection On Image", "Crop Image"]
EDGE = "image/bbbbbbbb_edge_aaaaaaaa_aaaaaaaa.png"


def records(n: int = 8) -> list[Record]:
    out = []
    for i in range(n):
        steps = [GoldStep(tool="Edge Detection On Image", args=["image/aaaaaaaa.png"], observation=EDGE)] \
            if i % 2 == 0 else []
        out.append(Record(id=f"r{i}", image_name="image/aaaaaaaa.png", caption="a cat", tools=TOOLS,
                          instruction=f"Find the edges {i}" if steps else "What is the capital of France?",
                          steps=steps, answer=f"Here: {EDGE}" if steps else "The capital of France is Paris.",
                          kind="positive" if steps else "negative", source=Source(teacher="test")))
    return out


@pytest.fixture
def data(tmp_path) -> Path:
    return save_jsonl(records(), tmp_path / "train.jsonl")


def test_labels_cover_only_the_models_own_text(tiny_llama):
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    rows, dropped = build_examples(records(2), tokenizer, "chat", 100000, ToolRegistry.from_load())
    assert len(rows) == 3 and not dropped  # step + final of the tool record, final of the negative one
    for row in rows:
        trained = [t for t, label in zip(row["input_ids"], row["labels"]) if label != -100]
        prompt = [t for t, label in zip(row["input_ids"], row["labels"]) if label == -100]
        assert row["labels"][:len(prompt)] == [-100] * len(prompt)  # one masked prefix, then the completion
        text = tokenizer.decode(trained)
        assert text.startswith("Thought: Do I need to use a tool?")
        assert "New input" not in text
    step_text = tokenizer.decode([t for t, lab in zip(rows[0]["input_ids"], rows[0]["labels"]) if lab != -100])
    assert step_text.endswith("Observation:") and EDGE not in step_text  # the observation is never trained
    final_prompt = tokenizer.decode([t for t, lab in zip(rows[1]["input_ids"], rows[1]["labels"]) if lab == -100])
    assert f"Observation: {EDGE}" in final_prompt  # it is in the next example's (masked) prompt
    assert rows[1]["input_ids"][-1] == tokenizer.eos_token_id


def test_the_decision_token_weighs_as_asked(tiny_llama):
    """--decision-weight w: each Yes / No after "...a tool?" counts w times; at 1, the model's own loss."""
    import torch
    from transformers import AutoModelForCausalLM, DataCollatorForSeq2Seq
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    rows, _ = build_examples(records(2), tokenizer, "chat", 100000, ToolRegistry.from_load())
    batch = DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100, padding=True)(rows)
    with torch.no_grad():
        outputs = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
    plain, fivefold = (decision_weighted_loss(tokenizer, w)(outputs, batch["labels"]).item() for w in (1, 5))
    assert plain == pytest.approx(outputs.loss.item(), rel=1e-5)
    logits, target = outputs.logits[:, :-1], batch["labels"][:, 1:]
    answers = {tokenizer.decode([t]).strip() for t in target[target != -100].tolist()}
    assert {"Yes", "No"} <= answers  # the batch holds both decisions
    token_loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, ignore_index=-100, reduction="none")
    def answers_the_question(i: int, j: int) -> bool:  # whatever the tokenizer, the token after "...a tool?"
        before = [t for t in target[i, :j].tolist() if t >= 0]
        return target[i, j] >= 0 and tokenizer.decode(before).rstrip().endswith("a tool?") \
            and tokenizer.decode([target[i, j].item()]).strip() in ("Yes", "No")
    decided = [(i, j) for i in range(target.shape[0]) for j in range(target.shape[1]) if answers_the_question(i, j)]
    assert len(decided) == len(rows)  # one decision per example
    extra = 4 * sum(token_loss[i, j].item() for i, j in decided) / (target != -100).sum().item()
    assert fivefold == pytest.approx(plain + extra, rel=1e-4)


def _cli(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=600, **kwargs)


def test_train_through_the_cli_then_chat_with_the_adapter(tiny_llama, data, tmp_path):
    run = tmp_path / "run"
    done = _cli("train", "--data", str(data), "--base", str(tiny_llama), "--out", str(run), "--epochs", "6",
                "--lr", "5e-3", "--batch-size", "2", "--cutoff", "100000", "--save-steps", "100")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in (run / "trainer_log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in events if e["event"] == "log" and "loss" in e]
    assert len(losses) == 36 and sum(losses[-5:]) / 5 < sum(losses[:5]) / 5  # the loss falls
    assert all("eta" in e and "percentage" in e for e in events if e["event"] == "log")
    adapter = run / "adapter"
    meta = json.loads((adapter / "toolsmith.json").read_text())
    assert meta["data_sha256"] and meta["examples"] == 12 and meta["global_step"] == 36
    assert f"base_model: {tiny_llama}" in (adapter / "README.md").read_text()  # our model card, not peft's blank
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], sorted(config["target_modules"])) == \
        (16, 16, ["k_proj", "o_proj", "q_proj", "v_proj"])
    controller = TransformersController.from_pretrained(str(tiny_llama), adapter=str(adapter))
    assert isinstance(controller.generate("hello", max_new_tokens=4)[0], str)


def test_stats_count_what_training_reads_for_each_template(tiny_llama, data):
    """`training stats`: one sequence a record with compact, one example a step with gpt4tools, and the tokens."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    seen = {}
    for template, sequences in (("compact", 8), ("gpt4tools", 12)):
        done = _cli("stats", "--data", str(data), "--base", str(tiny_llama), "--prompt", template, "--json",
                    "--tokens-per-second", "100", "--epochs", "2")
        assert done.returncode == 0, done.stderr[-2000:]
        stats = json.loads(done.stdout)
        rows, _ = build_examples(records(), tokenizer, "chat", 2048, ToolRegistry.from_load(), template)
        assert (stats["records"], stats["sequences"], stats["prompt"]) == (8, sequences, template)
        assert stats["tokens"] == sum(len(r["input_ids"]) for r in rows)
        assert stats["trained_tokens"] == sum(label != -100 for r in rows for label in r["labels"])
        assert stats["seconds"] == round(2 * stats["tokens"] / 100)
        seen[template] = stats
    assert seen["compact"]["trained_tokens"] == seen["gpt4tools"]["trained_tokens"]
    assert seen["compact"]["tokens"] < seen["gpt4tools"]["tokens"] / 2
    table = _cli("stats", "--data", str(data), "--base", str(tiny_llama)).stdout
    assert "| training sequences | 12 |" in table  # a hub id or folder trains in gpt4tools by default
    assert "no such data file" in _cli("stats", "--data", "missing.jsonl").stderr


def test_training_killed_midway_resumes_to_the_same_step_count(tiny_llama, data, tmp_path):
    run = tmp_path / "run"
    args = ["train", "--data", str(data), "--base", str(tiny_llama), "--out", str(run), "--max-steps", "40",
            "--batch-size", "1", "--cutoff", "100000", "--save-steps", "5"]
    proc = subprocess.Popen([sys.executable, "-m", "training", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((run / "checkpoints").glob("checkpoint-10")) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert not (run / "adapter").exists()
    done = _cli(*args, "--resume")
    assert done.returncode == 0, done.stderr[-2000:]
    meta = json.loads((run / "adapter" / "toolsmith.json").read_text())
    assert meta["global_step"] == 40
    starts = [json.loads(line) for line in (run / "trainer_log.jsonl").read_text().splitlines()
              if '"event": "start"' in line]
    # the second start continued from the last complete checkpoint (10, or 5 if 10 was cut short by the kill)
    assert starts[0]["step"] == 0 and starts[-1]["step"] in (5, 10)


def test_train_continues_from_an_init_adapter(tiny_llama, data, tmp_path):
    """`--init-adapter` starts from that adapter's weights (at lr 0 they come out unchanged), not a new LoRA."""
    from safetensors.torch import load_file
    first = train(TrainConfig(data=str(data), out=str(tmp_path / "first"), base=str(tiny_llama), max_steps=3,
                              learning_rate=5e-3, cutoff=100000))
    done = _cli("train", "--data", str(data), "--base", str(tiny_llama), "--out", str(tmp_path / "second"),
                "--init-adapter", str(first), "--max-steps", "1", "--lr", "0", "--cutoff", "100000",
                "--decision-weight", "5")
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = (load_file(str(a / "adapter_model.safetensors")) for a in (first, tmp_path / "second/adapter"))
    assert before.keys() == after.keys() and any(t.abs().sum() > 0 for k, t in before.items() if "lora_B" in k)
    assert all((before[k] == after[k]).all() for k in before)
    assert json.loads((tmp_path / "second/adapter/toolsmith.json").read_text())["config"]["decision_weight"] == 5
    missing = _cli("train", "--data", str(data), "--base", str(tiny_llama), "--out", str(tmp_path / "third"),
                   "--init-adapter", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "--init-adapter: no LoRA adapter" in missing.stderr


def test_bad_inputs_fail_before_training(tiny_llama, tmp_path):
    empty = tmp_path / "empty.jsonl"
    save_jsonl([records(1)[0].model_copy(update={"steps": [GoldStep(tool="Magic", args=["x"])]})], empty)
    with pytest.raises(TrainingError, match="no valid training examples.*unknown tool: 1"):
        train(TrainConfig(data=str(empty), out=str(tmp_path / "r1"), base=str(tiny_llama)))
    assert not (tmp_path / "r1").exists()
    with pytest.raises(TrainingError, match="no such data file"):
        train(TrainConfig(data=str(tmp_path / "nothing.jsonl"), out=str(tmp_path / "r2"), base=str(tiny_llama)))
    with pytest.raises(TrainingError, match="CUDA"):
        train(TrainConfig(data=str(empty), out=str(tmp_path / "r4"), base=str(tiny_llama), load_in_4bit=True))
    done = _cli("train", "--data", str(empty), "--base", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "r3"))
    assert done.returncode != 0 and "does not exist" in done.stderr


def test_an_adapter_for_another_base_is_refused(tiny_llama, data, tmp_path):
    from tiny_models import build_tiny_llama
    adapter = train(TrainConfig(data=str(data), out=str(tmp_path / "run"), base=str(tiny_llama), max_steps=1,
                                cutoff=100000))
    other = tmp_path / "other"
    build_tiny_llama(other)
    config = json.loads((other / "config.json").read_text())
    config["num_hidden_layers"] = 3  # a different architecture
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(ControllerError, match=f"trained on {tiny_llama}, not on {other}"):
        TransformersController.from_pretrained(str(other), adapter=str(adapter))
