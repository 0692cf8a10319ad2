"""Tiny random models built from configs, saved with save_pretrained, for the production loaders."""
from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (AutoModelForCausalLM, AutoTokenizer, BertTokenizerFast, BlipConfig,
                          BlipForConditionalGeneration, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor,
                          LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast)

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


def _tiny_clip_tokenizer(folder: Path):
    """A character-level CLIP BPE (no merges) written by hand: the diffusers dummies fetch theirs."""
    import json

    from transformers import CLIPTokenizer
    letters = [chr(c) for c in range(33, 127)]
    vocab = {tok: i for i, tok in enumerate(["<|startoftext|>", "<|endoftext|>", "!"]
                                             + [c for c in letters if c != "!"] + [c + "</w>" for c in letters])}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77,
                         pad_token="!")


def build_tiny_sd(folder: Path, kind: str = "text2image") -> Path:
    """A tiny Stable Diffusion pipeline (diffusers' own dummy sizes) saved with save_pretrained."""
    from diffusers import (AutoencoderKL, DDIMScheduler, StableDiffusionInpaintPipeline,
                           StableDiffusionInstructPix2PixPipeline, StableDiffusionPipeline, UNet2DConditionModel)
    from transformers import CLIPTextConfig, CLIPTextModel
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(4, 8), layers_per_block=1, sample_size=32, norm_num_groups=2,
                                in_channels={"pix2pix": 8, "inpaint": 9}.get(kind, 4), out_channels=4,
                                cross_attention_dim=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    vae = AutoencoderKL(block_out_channels=[4, 8], in_channels=3, out_channels=3, latent_channels=4,
                        norm_num_groups=2, down_block_types=["DownEncoderBlock2D"] * 2,
                        up_block_types=["UpDecoderBlock2D"] * 2)
    tokenizer = _tiny_clip_tokenizer(folder / "clip-vocab")
    text_encoder = CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=1, pad_token_id=2, hidden_size=32,
                                                intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
                                                vocab_size=len(tokenizer)))
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              clip_sample=False, set_alpha_to_one=False, steps_offset=1)
    cls = {"pix2pix": StableDiffusionInstructPix2PixPipeline,
           "inpaint": StableDiffusionInpaintPipeline}.get(kind, StableDiffusionPipeline)
    pipe = cls(unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, scheduler=scheduler,
               safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder


def build_tiny_controlnet(folder: Path) -> Path:
    from diffusers import ControlNetModel
    torch.manual_seed(0)
    ControlNetModel(block_out_channels=(4, 8), layers_per_block=1, in_channels=4, norm_num_groups=2,
                    down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), cross_attention_dim=32,
                    conditioning_embedding_out_channels=(16, 32)).save_pretrained(folder)
    return folder


def build_tiny_dpt(folder: Path) -> Path:
    """A tiny DPT depth estimator (transformers' DPTModelTester sizes) with its image processor."""
    from transformers import DPTConfig, DPTForDepthEstimation, DPTImageProcessor
    torch.manual_seed(0)
    config = DPTConfig(image_size=32, patch_size=16, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                       intermediate_size=37, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[16, 32, 64, 128],
                       fusion_hidden_size=32, head_in_index=-1)
    DPTForDepthEstimation(config).save_pretrained(folder)
    DPTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def build_tiny_sam(folder: Path) -> Path:
    """A tiny SAM whose vision output, prompt encoder and mask decoder widths agree (32)."""
    from transformers import (SamConfig, SamImageProcessor, SamMaskDecoderConfig, SamModel, SamProcessor,
                              SamPromptEncoderConfig, SamVisionConfig)
    torch.manual_seed(0)
    vision = SamVisionConfig(hidden_size=36, intermediate_size=72, output_channels=32, num_hidden_layers=2,
                             num_attention_heads=4, image_size=32, patch_size=2, global_attn_indexes=[0, 1],
                             num_pos_feats=16)
    prompt = SamPromptEncoderConfig(hidden_size=32, image_size=32, patch_size=2, mask_input_channels=4)
    decoder = SamMaskDecoderConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_dim=64,
                                   iou_head_hidden_dim=32)
    SamModel(SamConfig(vision_config=vision.to_dict(), prompt_encoder_config=prompt.to_dict(),
                       mask_decoder_config=decoder.to_dict())).save_pretrained(folder)
    SamProcessor(SamImageProcessor(size={"longest_edge": 32}, pad_size={"height": 32, "width": 32},
                                   mask_size={"longest_edge": 8},
                                   mask_pad_size={"height": 8, "width": 8})).save_pretrained(folder)
    return folder


def build_tiny_grounding_dino(folder: Path) -> Path:
    """A tiny Grounding DINO (transformers' GroundingDinoModelTester sizes) with a WordPiece vocabulary."""
    from transformers import (GroundingDinoConfig, GroundingDinoForObjectDetection, GroundingDinoImageProcessor,
                              GroundingDinoProcessor, SwinConfig)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "cat", "box", "dog", "the", "white", "wooden"]
    (folder / "vocab").mkdir(parents=True, exist_ok=True)
    (folder / "vocab" / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab" / "vocab.txt"))
    swin = SwinConfig(window_size=7, embed_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], image_size=98,
                      out_indices=[2, 3, 4])
    text = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8,
            "max_position_embeddings": 32, "model_type": "bert", "vocab_size": len(words)}
    config = GroundingDinoConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                 decoder_attention_heads=4, encoder_ffn_dim=4, decoder_ffn_dim=4, num_queries=8,
                                 num_feature_levels=4, encoder_n_points=2, decoder_n_points=6,
                                 use_timm_backbone=False, backbone_config=swin, max_text_len=16, text_config=text)
    torch.manual_seed(0)
    GroundingDinoForObjectDetection(config).save_pretrained(folder)
    GroundingDinoProcessor(GroundingDinoImageProcessor(size={"shortest_edge": 98, "longest_edge": 98}),
                           tokenizer).save_pretrained(folder)
    return folder


def build_tiny_shap_e(folder: Path) -> Path:
    """A tiny Shap-E pipeline (diffusers' ShapEPipelineFastTests sizes)."""
    from diffusers import HeunDiscreteScheduler, PriorTransformer, ShapEPipeline
    from diffusers.pipelines.shap_e import ShapERenderer
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection
    tokenizer = _tiny_clip_tokenizer(folder / "clip-vocab")
    torch.manual_seed(0)
    text_encoder = CLIPTextModelWithProjection(CLIPTextConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=2, hidden_size=32, projection_dim=32, intermediate_size=37,
        num_attention_heads=4, num_hidden_layers=2, vocab_size=len(tokenizer)))
    prior = PriorTransformer(num_attention_heads=2, attention_head_dim=16, embedding_dim=32, num_embeddings=32,
                             embedding_proj_dim=32, time_embed_dim=128, num_layers=1, clip_embed_dim=64,
                             additional_embeddings=0, time_embed_act_fn="gelu", norm_in_type="layer",
                             encoder_hid_proj_type=None, added_emb_type=None)
    renderer = ShapERenderer(param_shapes=((8, 93), (8, 8), (8, 8), (8, 8)), d_latent=32, d_hidden=8, n_output=12,
                             background=(0.1, 0.1, 0.1))
    scheduler = HeunDiscreteScheduler(beta_schedule="exp", num_train_timesteps=1024, prediction_type="sample",
                                      use_karras_sigmas=True, clip_sample=True, clip_sample_range=1.0)
    ShapEPipeline(prior=prior, text_encoder=text_encoder, tokenizer=tokenizer, shap_e_renderer=renderer,
                  scheduler=scheduler).save_pretrained(folder)
    return folder


def build_tiny_upernet(folder: Path, num_labels: int = 150) -> Path:
    """A tiny UperNet on a tiny ConvNeXt (transformers' UperNetModelTester sizes)."""
    from transformers import ConvNextConfig, SegformerImageProcessor, UperNetConfig, UperNetForSemanticSegmentation
    backbone = ConvNextConfig(num_stages=4, hidden_sizes=[10, 20, 30, 40], depths=[1, 1, 1, 1],
                              out_features=["stage2", "stage3", "stage4"])
    torch.manual_seed(0)
    UperNetForSemanticSegmentation(UperNetConfig(
        backbone_config=backbone, hidden_size=16, pool_scales=[1, 2, 3, 6], use_auxiliary_head=False,
        num_labels=num_labels)).save_pretrained(folder)
    SegformerImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def build_tiny_bert_qa(folder: Path) -> Path:
    """A tiny extractive-QA BERT with a WordPiece vocabulary of the words its test asks about."""
    from transformers import BertConfig, BertForQuestionAnswering
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "designed", "the", "eiffel", "tower", "is", "a",
             "in", "paris", "france", "it", "was", "by", "gustave", "engineer", "of", ".", ",", ":", "?"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), model_max_length=384)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37, max_position_embeddings=512)
    BertForQuestionAnswering(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_m2m100(folder: Path) -> Path:
    """A tiny NLLB-architecture (M2M100) translator whose vocabulary holds NLLB's language codes."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration
    special = ["<s>", "<pad>", "</s>", "<unk>", "eng_Latn", "deu_Latn", "fra_Latn"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["der klassische jüdische Mann", "the classic Jewish man", "le chat noir"],
                            trainers.BpeTrainer(vocab_size=300, special_tokens=special,
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", pad_token="<pad>", eos_token="</s>",
                                        unk_token="<unk>")
    torch.manual_seed(0)
    config = M2M100Config(vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1,
                          encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                          decoder_ffn_dim=32, max_position_embeddings=128, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2, decoder_start_token_id=2)
    M2M100ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def teach_tiny_llama(base: Path, folder: Path, target: str, context: str = "") -> Path:
    """The tiny model taught to write `target` after `context` (full fine-tuning, a few seconds): a real model
    that writes calls."""
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base)
    head = [tokenizer.bos_token_id, *tokenizer(context, add_special_tokens=False)["input_ids"]]
    tail = tokenizer(target, add_special_tokens=False)["input_ids"]
    ids, labels = torch.tensor([head + tail]), torch.tensor([[-100] * len(head) + tail])
    torch.manual_seed(0)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(150):
        model(input_ids=ids, labels=labels).loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
