"""A small ViT image classifier from a transformers config (random weights, nothing
downloaded): ViT-S/16 widths (384 wide, 6 heads, MLP 1536) with 6 layers instead of 12,
224 x 224 images in 16 x 16 patches (196 tokens + CLS), 1000 classes; batch 4.

Attention is "sdpa" (set explicitly, it is also transformers' default): one
scaled_dot_product_attention op, which eager runs with torch's fused CPU flash-attention kernel
and Inductor keeps fused, as deployed ViTs run. Dropout probabilities are 0 (the config's
default) and the weights come from torch's global generator, which autotune seeds with --seed
before get_model and before get_inputs, so eager outputs are deterministic.

autotune search benchmarks/models/vit.py --device cpu --trials 10
"""

import torch

try:
    from transformers import ViTConfig, ViTForImageClassification
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/vit.py needs transformers ({exc}): pip install transformers"
    ) from exc


def get_model(device):
    config = ViTConfig(
        image_size=224, patch_size=16, num_channels=3, hidden_size=384, num_hidden_layers=6,
        num_attention_heads=6, intermediate_size=1536, num_labels=1000,
        attn_implementation="sdpa",
    )  # fmt: skip
    return ViTForImageClassification(config).to(device)


def get_inputs(device):
    # pixel_values: [batch 4, channels 3, 224 x 224]; the output is ImageClassifierOutput
    # (logits [4, 1000]), which the correctness gate walks as a registered pytree node.
    return {"pixel_values": torch.randn(4, 3, 224, 224, device=device)}
