"""Generation with a GPT-2-style decoder (transformers config, random weights, nothing
downloaded; multi-head attention, learned positions, GELU MLP) and a static KV cache: the
decode suite's second model, beside benchmarks/models/llama_generate.py's Llama (grouped-query
attention, rotary positions, SwiGLU).

One request: a batch of BATCH (default 1) prompts of PROMPT tokens, 64 new tokens each, greedy
(the generate workload adds do_sample=False). Sized by device as the Llama: on CUDA 4 layers of
width 1024 and a 32000-token vocabulary, on CPU 6 layers of width 512 and 8000 tokens.

autotune search benchmarks/models/gpt2_generate.py --workload generate --device cpu --trials 8
"""

import os

import torch

try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/gpt2_generate.py needs transformers ({exc}): pip install transformers"
    ) from exc

PROMPT, MAX_CACHE, NEW = 32, 128, 64
BATCH = int(os.environ.get("DECODE_BATCH", "1"))


def model_config(device):
    """The decoder's config for a device (CUDA: GPU-sized; else CPU-sized)."""
    if str(device).startswith("cuda"):
        sizes = dict(n_embd=1024, n_layer=4, n_head=16, vocab_size=32000)
    else:
        sizes = dict(n_embd=512, n_layer=6, n_head=8, vocab_size=8000)
    return GPT2Config(**sizes, n_positions=MAX_CACHE, attn_implementation="sdpa")


def get_model(device):
    model = GPT2LMHeadModel(model_config(device)).to(device)
    model.generation_config.cache_implementation = "static"
    model.generation_config.max_length = MAX_CACHE
    model.generation_config.pad_token_id = 0
    return model


def get_inputs(device):
    vocab = model_config(device).vocab_size
    prompt = torch.randint(0, vocab, (BATCH, PROMPT), device=device)
    return {"input_ids": prompt, "attention_mask": torch.ones_like(prompt),
            "max_new_tokens": NEW, "min_new_tokens": NEW}  # fmt: skip
