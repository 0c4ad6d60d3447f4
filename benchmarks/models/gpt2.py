"""A 2-layer GPT-2 from a transformers config (random weights, nothing downloaded)."""

import torch


def get_model(device):
    from transformers import GPT2Config, GPT2Model

    # use_cache stays True (the default): the model returns its real output, a ModelOutput
    # holding a DynamicCache, and the correctness gate compares the cache's key/value tensors
    # too. Timings include filling the cache, as a real forward does.
    config = GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=128, vocab_size=1000)
    return GPT2Model(config).to(device)


def get_inputs(device):
    # input_ids: [batch 8, seq 64]
    return {"input_ids": torch.randint(0, 1000, (8, 64), device=device)}
