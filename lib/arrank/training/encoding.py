"""How a (prompt, docID) item becomes token ids: one convention shared by training and scoring.

The augmented query q-bar (section 5.1) is a user turn of the tokenizer's chat template plus the
generation prompt (without a template: BOS + prompt); the docID is encoded alone and followed by
EOS (the workbook's end of a docID; the paper's docIDs have none: docs/design.md, "Training"), and
the item is the two id lists joined (docs/design.md, "Known pitfalls")."""

from __future__ import annotations

from typing import Sequence


def prompt_ids(tokenizer, prompt: str) -> list[int]:
    """Token ids of the augmented prompt, ending where the docID's first token is predicted."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=True, add_generation_prompt=True
        )
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    return bos + tokenizer(prompt, add_special_tokens=False)["input_ids"]


def docid_ids(tokenizer, docid: str) -> list[int]:
    """Token ids of a docID followed by EOS (the end-of-docID token is part of the target)."""
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no EOS token; docIDs must end with one (docs/design.md, 'Training')")
    if not (ids := tokenizer(docid, add_special_tokens=False)["input_ids"]):
        raise ValueError(f"docID {docid!r} encodes to no tokens")
    return list(ids) + [tokenizer.eos_token_id]


def docid_table(tokenizer, docids: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Each distinct docID's ids (with EOS), encoded once; duplicates of an encoding are an error
    because two docIDs with the same tokens cannot be told apart by a model."""
    table = {d: tuple(docid_ids(tokenizer, d)) for d in dict.fromkeys(docids)}
    seen: dict[tuple[int, ...], str] = {}
    for d, ids in table.items():
        if ids in seen:
            raise ValueError(f"docIDs {seen[ids]!r} and {d!r} encode to the same tokens {ids}")
        seen[ids] = d
    return table
