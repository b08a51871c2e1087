"""Make a tiny random-weight Llama model for running real SGLang on CPU. No download.

Deterministic: the same files, byte for byte, on every run (fixed seed, sorted inputs).
Usage: python make_tiny_model.py OUT_DIR
Needs numpy, tokenizers and safetensors (all present in the SGLang venv).
"""

import json
import os
import sys
import sysconfig
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

VOCAB = 8192
HIDDEN = 256
LAYERS = 4
HEADS = 4
KV_HEADS = 2
FFN = 688
CONTEXT = 4096
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def training_text():
    """The Python standard library's own sources: always present, sorted for determinism."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py"))
    for p in files:
        try:
            yield p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue


def make_tokenizer(out: Path):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_text(), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    return tok


def make_weights(out: Path):
    rng = np.random.default_rng(1234)
    head_dim = HIDDEN // HEADS

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    t = {"model.embed_tokens.weight": w(VOCAB, HIDDEN), "lm_head.weight": w(VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        t[p + "self_attn.q_proj.weight"] = w(HEADS * head_dim, HIDDEN)
        t[p + "self_attn.k_proj.weight"] = w(KV_HEADS * head_dim, HIDDEN)
        t[p + "self_attn.v_proj.weight"] = w(KV_HEADS * head_dim, HIDDEN)
        t[p + "self_attn.o_proj.weight"] = w(HIDDEN, HEADS * head_dim)
        t[p + "mlp.gate_proj.weight"] = w(FFN, HIDDEN)
        t[p + "mlp.up_proj.weight"] = w(FFN, HIDDEN)
        t[p + "mlp.down_proj.weight"] = w(HIDDEN, FFN)
        t[p + "input_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
        t[p + "post_attention_layernorm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    t["model.norm.weight"] = np.ones(HIDDEN, dtype=np.float32)
    save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_model.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer(out)
    eos = tok.token_to_id("<|endoftext|>")
    im_end = tok.token_to_id("<|im_end|>")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HIDDEN // HEADS,
        "max_position_embeddings": CONTEXT,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "bos_token_id": eos,
        "eos_token_id": eos,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": eos, "eos_token_id": [eos, im_end]}, indent=2) + "\n"
    )
    chat_template = (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{{ message['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tok_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": CONTEXT,
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "chat_template": chat_template,
        "clean_up_tokenization_spaces": False,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                    "pad_token": "<|endoftext|>"}, indent=2) + "\n"
    )
    make_weights(out)
    print(f"tiny model written to {out}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
