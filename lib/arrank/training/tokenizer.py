"""BPE tokenizers trained on the task's own text (the ``tiny`` model of docs/design.md, "What a CPU
can show"): a whitespace pre-tokenizer keeps each docID one pre-token, alone and inside a prompt."""

from __future__ import annotations

from typing import Iterable

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")


def train_bpe(texts: Iterable[str], vocab_size: int, special_tokens: tuple[str, ...] = SPECIAL_TOKENS):
    """Train a BPE tokenizer (tokenizers library) wrapped as a transformers fast tokenizer,
    deterministically; ``vocab_size`` counts the special tokens (pad, bos, eos, unk first)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= len(special_tokens):
        raise ValueError(f"vocab_size={vocab_size!r} must be an integer > {len(special_tokens)}")
    pad, bos, eos, unk = special_tokens[:4]
    tok = Tokenizer(models.BPE(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, bos_token=bos, eos_token=eos, unk_token=unk)
