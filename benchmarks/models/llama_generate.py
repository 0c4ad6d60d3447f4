"""Generation with a Llama-style decoder (transformers config, random weights, nothing
downloaded) and a static KV cache, as Hugging Face documents it: the generate workload's model.

One request: a batch of BATCH (default 1) prompts of 32 tokens, 64 new tokens each, greedy (the
generate workload adds do_sample=False). Sized by device as benchmarks/models/llama_decode.py:
on CUDA 4 layers of width 1024, on CPU the decode probe's 6 layers of width 512.

autotune search benchmarks/models/llama_generate.py --workload generate --device cpu --trials 8
"""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llama_decode import MAX_CACHE, PROMPT, LlamaForCausalLM, llama_config  # noqa: E402

NEW = 64
BATCH = int(os.environ.get("DECODE_BATCH", "1"))


def model_config(device):
    """The decoder's config for a device (llama_decode's)."""
    return llama_config(device)


def get_model(device):
    model = LlamaForCausalLM(model_config(device)).to(device)
    model.generation_config.cache_implementation = "static"
    model.generation_config.max_length = MAX_CACHE
    model.generation_config.pad_token_id = 0
    return model


def get_inputs(device):
    vocab = model_config(device).vocab_size
    prompt = torch.randint(0, vocab, (BATCH, PROMPT), device=device)
    return {"input_ids": prompt, "attention_mask": torch.ones_like(prompt),
            "max_new_tokens": NEW, "min_new_tokens": NEW}  # fmt: skip
