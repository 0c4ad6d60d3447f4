"""A ResNet-18-shaped image classifier from a transformers config (random weights, nothing
downloaded): basic blocks [2, 2, 2, 2], widths 64 to 512, 1000 classes."""

import torch


def get_model(device):
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        depths=[2, 2, 2, 2], hidden_sizes=[64, 128, 256, 512], layer_type="basic", num_labels=1000
    )
    return ResNetForImageClassification(config).to(device)


def get_inputs(device):
    # pixel_values: [batch 8, channels 3, 112 x 112]
    return {"pixel_values": torch.randn(8, 3, 112, 112, device=device)}
