"""Writes a GGUF's tokenizer as a Hugging Face tokenizer folder, offline.

lm-eval's `--apply_chat_template` through `local-completions` renders the
chat with a Hugging Face tokenizer (tokenizer_backend=huggingface), which it
otherwise fetches from the Hub. This builds that tokenizer from the GGUF with
transformers' own GGUF conversion (convert_gguf_tokenizer), reading the
metadata with the gguf package, because transformers' GGUF reader imports
torch, which lm-eval[api] does not install. Prints the token ids of a probe
text so that a caller can check them against llama.cpp's.

usage: gguf_tokenizer.py MODEL.gguf OUT_DIR [--chat-template FILE]
"""

import argparse
import json

from gguf import GGUFReader
from transformers import PreTrainedTokenizerFast
from transformers.integrations.gguf.gguf_tokenizer_mapping import (
    _SPECIAL_TOKENS,
    GGUF_TOKENIZER_MAPPING,
    convert_gguf_tokenizer,
)


def tokenizer_metadata(path):
    """The file's tokenizer.* keys and its architecture, as Python values."""
    fields = GGUFReader(path).fields
    return {
        key: field.contents()
        for key, field in fields.items()
        if key.startswith("tokenizer.") or key == "general.architecture"
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--chat-template")
    args = parser.parse_args()

    metadata = tokenizer_metadata(args.model)
    # What transformers' get_gguf_tokenizer does with its own reader.
    grouped = {
        group: {name: metadata[f"tokenizer.{key}"] for key, name in renames.items() if f"tokenizer.{key}" in metadata}
        for group, renames in GGUF_TOKENIZER_MAPPING.items()
    }
    tokenizer, config = grouped["tokenizer"], grouped["tokenizer_config"]
    if tokenizer.get("tokenizer_type") == "llama":
        config.setdefault("add_bos_token", True)
    for name, key in _SPECIAL_TOKENS.items():
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        config[name] = tokenizer["tokens"][token_id] if token_id is not None else None
    backend, extra = convert_gguf_tokenizer(metadata["general.architecture"], tokenizer)
    built = PreTrainedTokenizerFast(tokenizer_object=backend, **config, **extra)
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            built.chat_template = f.read()
    built.save_pretrained(args.out)
    probe = 'Question: "Which gas do plants take in?" Answer: carbon dioxide'
    print(json.dumps({"probe": probe, "ids": built(probe, add_special_tokens=False).input_ids}))


if __name__ == "__main__":
    main()
