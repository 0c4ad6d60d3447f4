"""A Llama-style decoder from a transformers config (random weights, nothing downloaded):
4 layers, width 512, grouped-query attention (8 heads, 2 key/value heads), SwiGLU MLP, RMSNorm,
rotary positions; measured on a prefill of 2 sequences of 128 tokens."""

import torch


def get_model(device):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=8192, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
        use_cache=False,
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device)


def get_inputs(device):
    # input_ids: [batch 2, seq 128]
    return {"input_ids": torch.randint(0, 8192, (2, 128), device=device)}
