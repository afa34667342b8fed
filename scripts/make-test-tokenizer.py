#!/usr/bin/env python3
"""Trains the small byte-level BPE tokenizer the tests use
(tests/fixtures/tokenizer/tokenizer.json), shaped like Qwen's: a byte-level
pre-tokenizer with a regex split, no BOS, `<|endoftext|>` as special token.
Deterministic for a given `tokenizers` version; needs `pip install tokenizers`."""
import json
import pathlib

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

root = pathlib.Path(__file__).resolve().parent.parent
texts = []
for conv in json.loads((root / "datasets/sharegpt-sample.json").read_text()):
    texts.extend(turn["value"] for turn in conv["conversations"])
texts.append("The quick brown fox jumps over the lazy dog. 0123456789 !?.,;:'\"()[]{}")

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(
    vocab_size=1024,
    special_tokens=["<|endoftext|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
tok.train_from_iterator(texts, trainer)
out = root / "tests/fixtures/tokenizer/tokenizer.json"
out.parent.mkdir(parents=True, exist_ok=True)
tok.save(str(out))
print(out, tok.get_vocab_size())
