"""A served BERT encoder (transformers, random weights, 4 layers, hidden 256) and its traffic:
48 requests of batch 4 whose lengths are drawn log-normal between 8 and 256 tokens (median 48,
seeded), each one request of the mix; as ../shared/probes/shape_plan.py measured it.

It declares how its inputs pad (PADDING: token ids and attention mask padded with 0, the
per-token output cut back), so that a search tries the shape plans, and how a recorded trace's
shape builds a request (get_request, for --traffic benchmarks/models/bert_traffic_trace.csv).
"""

import math
import random

import torch

VOCAB = 8000
BATCH = 4
REQUESTS = 48

PADDING = {
    "inputs": {
        "input_ids": {"dim": 1, "value": 0},
        "attention_mask": {"dim": 1, "value": 0},
    },
    "outputs": {"last_hidden_state": 1},
}


def lengths(count=REQUESTS, seed=7):
    """The traffic's sequence lengths: log-normal around 48 tokens, within 8..256."""
    rng = random.Random(seed)
    return [max(8, min(256, int(math.exp(rng.gauss(math.log(48), 0.7))))) for _ in range(count)]


def get_model(device):
    from transformers import BertConfig, BertModel

    config = BertConfig(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
        vocab_size=VOCAB, max_position_embeddings=512,
    )  # fmt: skip
    return BertModel(config).eval().to(device)


def get_request(device, batch=BATCH, seq_len=48, seed=0):
    generator = torch.Generator().manual_seed(seed * 1000 + seq_len)
    ids = torch.randint(1, VOCAB, (batch, seq_len), generator=generator)
    mask = torch.ones(batch, seq_len, dtype=torch.long)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def get_traffic(device):
    return [(get_request(device, BATCH, n, seed=i), 1) for i, n in enumerate(lengths())]


def units(inputs):
    return inputs["attention_mask"].sum().item(), "tokens"
