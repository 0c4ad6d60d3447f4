"""A 2-layer BERT from a transformers config, random weights (nothing is downloaded).

autotune search studies/bert_tiny.py --device cpu --trials 10
"""

from __future__ import annotations

import torch
from torch import nn


def get_model(device: str) -> nn.Module:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=1000,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=512,
        max_position_embeddings=128,
    )
    return BertModel(config).to(device)


def get_inputs(device: str) -> dict[str, torch.Tensor]:
    # input_ids, attention_mask: [batch 8, seq 64]
    input_ids = torch.randint(0, 1000, (8, 64), device=device)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
