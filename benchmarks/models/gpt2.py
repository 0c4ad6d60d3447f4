"""A 2-layer GPT-2 from a transformers config (random weights, nothing downloaded)."""

import torch


def get_model(device):
    from transformers import GPT2Config, GPT2Model

    # use_cache=False: the KV cache object is not an output to compare, nor to time
    config = GPT2Config(
        n_layer=2, n_embd=128, n_head=4, n_positions=128, vocab_size=1000, use_cache=False
    )
    return GPT2Model(config).to(device)


def get_inputs(device):
    # input_ids: [batch 8, seq 64]
    return {"input_ids": torch.randint(0, 1000, (8, 64), device=device)}
