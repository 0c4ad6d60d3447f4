"""Training a small ViT image classifier (transformers config, random weights, nothing
downloaded): benchmarks/models/vit.py's model (ViT-S/16 widths, 6 layers, 224 x 224 images in
16 x 16 patches, 1000 classes); one step is a batch of 4 images with their labels, the
classification (cross-entropy) loss transformers computes from ``labels``, backward, AdamW.

Dropout probabilities are 0 (the config's default); attention is "sdpa". The weights, images
and labels come from torch's global generator, which autotune seeds before get_model and
get_inputs.

autotune search benchmarks/models/vit_train.py --workload train --device cpu --trials 10
"""

import torch

try:
    from transformers import ViTConfig, ViTForImageClassification
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/vit_train.py needs transformers ({exc}): pip install transformers"
    ) from exc

BATCH, CLASSES = 4, 1000


def get_model(device):
    config = ViTConfig(
        image_size=224, patch_size=16, num_channels=3, hidden_size=384, num_hidden_layers=6,
        num_attention_heads=6, intermediate_size=1536, num_labels=CLASSES,
        attn_implementation="sdpa",
    )  # fmt: skip
    return ViTForImageClassification(config).to(device)


def get_inputs(device):
    # pixel_values: [batch 4, channels 3, 224 x 224]; labels: [4] class indices
    return {
        "pixel_values": torch.randn(BATCH, 3, 224, 224, device=device),
        "labels": torch.randint(0, CLASSES, (BATCH,), device=device),
    }


def get_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def loss_fn(output, inputs):
    # ImageClassifierOutput: the model computed the cross-entropy loss from `labels`
    return output.loss


def units(inputs):
    # What one step processes: the reports and the best-config file give samples/s.
    return inputs["pixel_values"].shape[0], "samples"
