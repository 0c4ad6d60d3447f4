"""A 4-layer GPT-2 of GPT-2 small's width (768, 12 heads), batch 16 x 256 tokens: sized to keep one
H100/H200 busy. Random weights from a transformers config (nothing downloaded).

python benchmarks/suite.py --device cuda --models gpt2-gpu
"""

import torch


def get_model(device):
    from transformers import GPT2Config, GPT2Model

    # use_cache stays True (the default), as in gpt2.py: the forward fills the KV cache, and the
    # correctness gate compares the cache's tensors too.
    config = GPT2Config(n_layer=4, n_embd=768, n_head=12, n_positions=256, vocab_size=50257)
    return GPT2Model(config).to(device)


def get_inputs(device):
    # input_ids: [batch 16, seq 256]
    return {"input_ids": torch.randint(0, 50257, (16, 256), device=device)}
