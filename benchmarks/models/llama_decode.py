"""One decode step of a Llama-style decoder (transformers config, random weights, nothing
downloaded) with a static KV cache, as Hugging Face documents generation with
``cache_implementation="static"``: the call is the forward of one new token per sequence at
position PROMPT, the cache already holding the PROMPT tokens before it (a prefill in get_model).
A call writes its token's keys and values at that one position (the cache's write counters set
back to PROMPT first), so every call computes the same logits: the correctness gate and the
timing see the same work each time.

Until the generate workload lands, this is how autotune searches decode: the config it emits is
applied to the model ``generate()`` runs (benchmarks/decode_suite.py does that and times
``generate()`` itself). Sized by device: on CUDA 4 layers of width 1024 (16 heads, 4 key/value
heads, SwiGLU 2816, vocabulary 32000), batch BATCH (default 1); on CPU the decode probe's
6 layers of width 512.

autotune search benchmarks/models/llama_decode.py --device cuda --trials 8
"""

import os

import torch

try:
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache
except ImportError as exc:
    raise ImportError(
        f"benchmarks/models/llama_decode.py needs transformers ({exc}): pip install transformers"
    ) from exc

PROMPT, MAX_CACHE = 32, 128
BATCH = int(os.environ.get("DECODE_BATCH", "1"))


def llama_config(device):
    """The decoder's config for a device (CUDA: GPU-sized; else the CPU probe's)."""
    if str(device).startswith("cuda"):
        sizes = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                     num_attention_heads=16, num_key_value_heads=4, vocab_size=32000)  # fmt: skip
    else:
        sizes = dict(hidden_size=512, intermediate_size=1376, num_hidden_layers=6,
                     num_attention_heads=8, num_key_value_heads=4, vocab_size=8000)  # fmt: skip
    return LlamaConfig(**sizes, max_position_embeddings=MAX_CACHE, attn_implementation="sdpa")


class DecodeStep(torch.nn.Module):
    """A Llama and its static cache, prefilled with a prompt; forward decodes one token."""

    def __init__(self, llama, batch, device):
        super().__init__()
        self.llama = llama
        self.cache = StaticCache(config=llama.config, max_cache_len=MAX_CACHE)
        prompt = torch.randint(0, llama.config.vocab_size, (batch, PROMPT), device=device)
        with torch.no_grad():
            llama(input_ids=prompt, cache=self.cache, use_cache=True,
                  cache_position=torch.arange(PROMPT, device=device))  # fmt: skip

    def forward(self, input_ids, cache_position):
        # transformers >= 5 writes at each layer's own counter: back to the prompt's end, so
        # that every call decodes the same position.
        for layer in self.cache.layers:
            layer.cumulative_length.fill_(PROMPT)
        out = self.llama(
            input_ids=input_ids, cache=self.cache, use_cache=True,
            cache_position=cache_position,
            position_ids=cache_position.expand(input_ids.shape[0], 1),
        )  # fmt: skip
        return out.logits


def get_model(device):
    llama = LlamaForCausalLM(llama_config(device)).to(device).eval()
    return DecodeStep(llama, BATCH, device)


def get_inputs(device):
    # input_ids: [batch, 1], the new token; cache_position: [1], the position it takes
    vocab = llama_config(device).vocab_size
    return {"input_ids": torch.randint(0, vocab, (BATCH, 1), device=device),
            "cache_position": torch.tensor([PROMPT], device=device)}  # fmt: skip


def units(inputs):
    # One token per sequence: reports and the best-config file give tokens/s.
    return inputs["input_ids"].shape[0], "tokens"
