"""A 4-layer encoder of BERT-base's width (hidden 768, 12 heads, FFN 3072), batch 32 x 256 tokens:
sized to keep one H100/H200 busy. Random weights from a transformers config (nothing downloaded).

python benchmarks/suite.py --device cuda --models bert-gpu
"""

import torch


def get_model(device):
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=30522,
        hidden_size=768,
        num_hidden_layers=4,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
    )
    return BertModel(config).to(device)


def get_inputs(device):
    # input_ids, attention_mask: [batch 32, seq 256]
    input_ids = torch.randint(0, 30522, (32, 256), device=device)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
