"""A Llama-style decoder from a transformers config (random weights, nothing downloaded):
4 layers, width 512, grouped-query attention (8 heads, 2 key/value heads), SwiGLU MLP, RMSNorm,
rotary positions; measured on a prefill of 2 sequences of 128 tokens.

use_cache=False: the output is a CausalLMOutputWithPast holding only the logits [2, 128, 8192],
which the correctness gate walks as a registered pytree node. Attention is "sdpa" (set
explicitly, it is also transformers' default): one causal scaled_dot_product_attention op, which
eager runs with torch's fused CPU flash-attention kernel and Inductor keeps fused, as deployed
Llamas run. Without padding no attention mask is needed. The weights come from torch's global
generator, which autotune seeds with --seed before get_model and before get_inputs.
"""

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/llama.py needs transformers ({exc}): pip install transformers"
    ) from exc


def get_model(device):
    config = LlamaConfig(
        vocab_size=8192, hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
        use_cache=False, attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device)


def get_inputs(device):
    # input_ids: [batch 2, seq 128]
    return {"input_ids": torch.randint(0, 8192, (2, 128), device=device)}
