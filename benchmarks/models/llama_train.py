"""Training a Llama-style decoder (transformers config, random weights, nothing downloaded), as
../shared/probes/train_levers.py measured it: 4 layers, width 256, grouped-query attention (4
heads, 2 key/value heads), SwiGLU MLP 688 wide, vocabulary 4000; one step is a batch of
4 sequences x 128 tokens, the LM loss (transformers shifts the labels), backward, AdamW.

use_cache=False (no key/value cache in training); attention is "sdpa". The weights and the
token ids come from torch's global generator, which autotune seeds before get_model and
get_inputs.

autotune search benchmarks/models/llama_train.py --workload train --device cpu --trials 10
"""

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/llama_train.py needs transformers ({exc}): pip install transformers"
    ) from exc

BATCH, SEQUENCE, VOCAB = 4, 128, 4000


def get_model(device):
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        use_cache=False, attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device)


def get_inputs(device):
    # input_ids and labels: [batch 4, seq 128], the same tokens (the model shifts the labels)
    ids = torch.randint(0, VOCAB, (BATCH, SEQUENCE), device=device)
    return {"input_ids": ids, "labels": ids}


def get_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def loss_fn(output, inputs):
    # CausalLMOutputWithPast: the model computed the LM loss from `labels`
    return output.loss


def units(inputs):
    # What one step processes: the reports and the best-config file give tokens/s.
    return inputs["input_ids"].numel(), "tokens"
