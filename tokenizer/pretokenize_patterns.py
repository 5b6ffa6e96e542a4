"""The regular expressions a byte-level model's pre-split can name, as text (what a Hugging Face ``Split``
pre-tokenizer writes); :mod:`tokenizer.kernels.pretokenize` runs them without a regex engine. Its own module, so
that reading or writing a tokenizer.json loads no kernels. ``PATTERN_TEXT["gpt2"]`` starts with ``'s|'t``.
"""

PATTERN_TEXT = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+",
    # tiktoken's o200k_base pattern: its seven alternatives joined with "|" (tiktoken_ext/openai_public.py)
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
             r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
             r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
             r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
             r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # superword BPE's second stage (tokenizer.kernels.superword_split): the stretches between matches are pieces too
    "superword": r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*|\s*[\r\n]+|\s+(?!\S)",
    # the published SuperBPE tokenizers' second-stage split (spaces only in its last alternative)
    "superbpe": r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)",
}
