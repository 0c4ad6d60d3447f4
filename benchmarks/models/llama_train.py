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

# CPU: the probe's sizes. CUDA: sized to keep one H100/H200 busy (width 1024, 16 heads, 4
# key/value heads, SwiGLU 2816, vocabulary 32000, batch 8 x 512 tokens).
CPU = dict(batch=4, sequence=128, vocab=4000, hidden_size=256, intermediate_size=688,
           num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
CUDA = dict(batch=8, sequence=512, vocab=32000, hidden_size=1024, intermediate_size=2816,
            num_attention_heads=16, num_key_value_heads=4)  # fmt: skip


def sizes(device):
    return CUDA if str(device).startswith("cuda") else CPU


def get_model(device):
    s = sizes(device)
    config = LlamaConfig(
        vocab_size=s["vocab"], hidden_size=s["hidden_size"],
        intermediate_size=s["intermediate_size"], num_hidden_layers=4,
        num_attention_heads=s["num_attention_heads"],
        num_key_value_heads=s["num_key_value_heads"], max_position_embeddings=512,
        use_cache=False, attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device)


def get_inputs(device):
    # input_ids and labels: [batch, seq] (CPU 4 x 128), the same tokens (the model shifts the
    # labels)
    s = sizes(device)
    ids = torch.randint(0, s["vocab"], (s["batch"], s["sequence"]), device=device)
    return {"input_ids": ids, "labels": ids}


def get_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def loss_fn(output, inputs):
    # CausalLMOutputWithPast: the model computed the LM loss from `labels`
    return output.loss


def units(inputs):
    # What one step processes: the reports and the best-config file give tokens/s.
    return inputs["input_ids"].numel(), "tokens"
