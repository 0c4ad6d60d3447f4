"""nn.TransformerEncoder, d_model 256, 4 layers, batch 8 x seq 128, with the fused fastpath off
(in eval + no_grad the fastpath is one opaque op Inductor cannot see into)."""

import torch
from torch import nn


def get_model(device):
    torch.backends.mha.set_fastpath_enabled(False)
    layer = nn.TransformerEncoderLayer(
        d_model=256, nhead=4, dim_feedforward=1024, batch_first=True
    )
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).to(device)


def get_inputs(device):
    return (torch.randn(8, 128, 256, device=device),)
