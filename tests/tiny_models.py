"""Tiny random models built from configs, saved with save_pretrained, for the production loaders."""
from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (BertTokenizerFast, BlipConfig, BlipForConditionalGeneration, BlipForQuestionAnswering,
                          BlipImageProcessor, BlipProcessor, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast)

from agent.prompts import FORMAT_INSTRUCTIONS, PREFIX, SUFFIX

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_tiny_llama(folder: Path, seed: int = 0) -> Path:
    """A 2-layer Llama with a byte-level BPE trained on the GPT4Tools prompt, plus a chat template."""
    corpus = [PREFIX, FORMAT_INSTRUCTIONS, SUFFIX, "Edge Detection On Image image/1a2b3c4d.png Thought: Yes No AI:",
              "The capital of France is Paris. 0123456789 + - * / = ( )"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", chat_template=CHATML)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_blip(folder: Path, task: str) -> Path:
    """A tiny BLIP (captioning or VQA) with a WordPiece vocabulary small enough for its config."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]", "a", "photo", "of", "cat", "dog", "box",
             "white", "black", "what", "is", "in", "the", "image", "how", "many", "color", "?", "two"]
    (folder / "vocab").mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab" / "vocab.txt"
    vocab.write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), bos_token="[DEC]", model_max_length=64)
    processor = BlipProcessor(BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer)
    ids = tokenizer.convert_tokens_to_ids
    text = dict(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=37, encoder_hidden_size=32, max_position_embeddings=64,
                bos_token_id=ids("[DEC]"), sep_token_id=ids("[SEP]"), pad_token_id=ids("[PAD]"))
    vision = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  image_size=32, patch_size=8)
    config = BlipConfig(text_config=text, vision_config=vision, projection_dim=32)
    torch.manual_seed(0)
    model_class = BlipForConditionalGeneration if task == "caption" else BlipForQuestionAnswering
    model_class(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
