"""Convert the tiny HF model to GGUF for llama.cpp's server, with llama.cpp's own converter.

The converter recognizes a BPE tokenizer by hashing how it pre-splits a test text, and refuses
unknown hashes. The tiny model's tokenizer is byte-level BPE with the GPT-2 split regex, which
llama.cpp calls "gpt-2", so that name is given instead of the hash lookup; everything else is
the stock converter.

    LLAMA_SRC=<llama.cpp source> python convert_tiny_gguf.py MODEL_DIR --outtype f32 --outfile OUT
"""
import os
import runpy
import sys

src = os.environ["LLAMA_SRC"]
sys.path[:0] = [src, os.path.join(src, "gguf-py")]
import conversion.base as base  # noqa: E402  (needs the path above)

base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
sys.argv[0] = os.path.join(src, "convert_hf_to_gguf.py")
runpy.run_path(sys.argv[0], run_name="__main__")
