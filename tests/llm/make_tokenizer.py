"""Byte-level BPE tokenizer fixture (issue 12), in the Llama 3 style.

  python3 tests/llm/make_tokenizer.py            # train + write the fixtures
  python3 tests/llm/make_tokenizer.py --check BIN [--tokenizer FILE]
        # encode/decode the texts below with the `tokenizers` library and run
        # BIN (build/bin/test_tokenizer) on those expectations (CTest does this)

Training (tokenizers' BpeTrainer, 1024 tokens, on data/tinyshakespeare.txt)
writes tests/llm/tokenizer.json: Split with Llama 3's regex (Isolated) then
ByteLevel without its own regex, ByteLevel decoder, ignore_merges, the special
tokens <|begin_of_text|> / <|end_of_text|>, and a TemplateProcessing that puts
<|begin_of_text|> first. tests/llm/tokenizer_cases.json keeps the expected
encodings so test_tokenizer also runs where the library is absent. Two more
fixtures cover the other supported pre-tokenizers the same way:
tokenizer_gpt2.json (ByteLevel with GPT-2's regex, as SmolLM) and
tokenizer_qwen2.json (Qwen2's regex: single digits), with their cases files.
The library comes from PyPI into .deps/python-tokenizers (scripts/setup-deps.sh)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, ".deps", "python-tokenizers"))

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from tokenizers import __version__ as tokenizers_version  # noqa: E402

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")
# the fixtures: (style, tokenizer file, cases file); llama3 is the one the
# tiny models use, gpt2 (SmolLM's ByteLevel with its own regex) and qwen2
# (single digits) cover the other supported pre-tokenizers
STYLES = [("llama3", "tokenizer.json", "tokenizer_cases.json"),
          ("gpt2", "tokenizer_gpt2.json", "tokenizer_gpt2_cases.json"),
          ("qwen2", "tokenizer_qwen2.json", "tokenizer_qwen2_cases.json"),
          ("llama2", "tokenizer_llama2.json", "tokenizer_llama2_cases.json"),
          ("llama2-metaspace", "tokenizer_metaspace.json", "tokenizer_metaspace_cases.json")]
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>"]

TEXTS = [
    "",
    "Hello, world!",
    "First Citizen:\nBefore we proceed any further, hear me speak.",
    "ROMEO: But, soft! what light through yonder window breaks?",
    "I'm sure they'll say you've WON'T can't I'D he's",
    "Numbers: 0 7 42 123 1234 12345678 3.14159 -27 1e10 2026-11-24",
    "Punctuation!!! ??? ... ,,, ;; :: -- (parens) [brackets] {braces} <angles> \"quotes\" 'single'",
    "   leading spaces and trailing   ",
    "tabs\tand\ttabs\t\tdouble",
    "line one\nline two\n\nline four\r\nwindows\r\n\r\n",
    "    \n    indented\n\t\n",
    "Unicode: café naïve résumé Zürich Ελληνικά Русский текст 日本語のテキスト 中文 한국어",
    "Emoji: 😀🎉👍🏽 ❤️ 🇫🇷 family 👨‍👩‍👧",
    "Mixed scripts: abcабв123١٢٣ ½ ² ⅓",
    "Symbols: © ® ™ € £ ¥ § ¶ • … — – ← → ∑ ∞ ≠ ≤",
    "Special tokens inline: <|begin_of_text|>Hello<|end_of_text|> and after",
    "a" * 40 + " " + "ab" * 25,
    "What's up?'s 'S 'T 'Re'vE",
    "x" + " " * 17 + "y\n\n\n\nz",
    "\u00a0non-breaking\u2003em-space\u3000ideographic",
]


def train_llama2(path_text, path_out, metaspace=False):
    """SentencePiece-style BPE as Llama 2 / TinyLlama's tokenizer.json: no
    pre-tokenizer, spaces as U+2581 with one prepended, byte fallback to
    <0xXX> tokens, decoder Replace + ByteFallback + Fuse + Strip. metaspace:
    the newer conversion, a Metaspace pre-tokenizer (prepend_scheme first,
    split false) instead of the normalizer."""
    tok = Tokenizer(models.BPE(byte_fallback=True, fuse_unk=True))
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False),
                                         decoders.ByteFallback(), decoders.Fuse()])
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=specials, show_progress=False, limit_alphabet=100)
    tok.train([path_text], trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    tok.save(path_out, pretty=False)


def train(path_text, path_out, style="llama3"):
    if style.startswith("llama2"):
        return train_llama2(path_text, path_out, metaspace=style == "llama2-metaspace")
    tok = Tokenizer(models.BPE(ignore_merges=style != "gpt2"))
    if style == "qwen2":
        tok.normalizer = normalizers.NFC()  # as Qwen2's tokenizer.json
    if style == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX if style == "llama3" else QWEN2_REGEX), behavior="isolated",
                                 invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([path_text], trainer)
    bos = tok.token_to_id(SPECIALS[0])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{SPECIALS[0]} $A", pair=f"{SPECIALS[0]} $A {SPECIALS[0]} $B", special_tokens=[(SPECIALS[0], bos)])
    tok.save(path_out, pretty=False)


def cases(path_tokenizer):
    tok = Tokenizer.from_file(path_tokenizer)
    out = []
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        ids_special = tok.encode(text, add_special_tokens=True).ids
        out.append({"text": text, "ids": ids, "ids_special": ids_special,
                    "decoded": tok.decode(ids, skip_special_tokens=False)})
    return out


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--check":
        rc = 0
        for style, name, _ in STYLES:
            tokenizer = os.path.join(HERE, name)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "cases.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(cases(tokenizer), f, ensure_ascii=False)
                print(f"{style}: {name} against tokenizers {tokenizers_version}", flush=True)
                rc |= subprocess.call([sys.argv[2], "--tokenizer", tokenizer, "--cases", path])
        return rc
    for style, name, cases_name in STYLES:
        tokenizer = os.path.join(HERE, name)
        train(os.path.join(ROOT, "data", "tinyshakespeare.txt"), tokenizer, style)
        with open(os.path.join(HERE, cases_name), "w", encoding="utf-8") as f:
            json.dump(cases(tokenizer), f, ensure_ascii=False, indent=0)
        print("wrote", name, "and", cases_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
