"""Decoding docIDs (section 5.1 "Task Setup" and its footnote): greedy decoding, the paper's proxy,
and beam search constrained to the query's docID trie, which returns a ranked top-k list directly
("in practice, a top-k ranking can still be directly generated via beam search using beam size k").

Token ids follow ``arrank.training.encoding``: a generation is a valid docID exactly when its
tokens up to and including the first EOS equal one candidate's ``docid_ids``. Beam search ranks
hypotheses by their sequence log-probability log p(d | q-bar), EOS included (``length_penalty=0``),
what ARR ranks by, unlike the mean-token score of ``scoring`` (the paper's proxy); notebook 06
compares the two rankings. Beam search keeps the best ``num_beams`` prefixes per step, so it can
miss a docID whose prefix is unlikely; with ``num_beams`` at least the trie's widest level it is
exact.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from arrank.evaluation.scoring import check_candidates, eval_mode, model_device
from arrank.training.encoding import docid_table, prompt_ids
from arrank.training.trie import build_trie


def prefix_children(docids: Sequence[Sequence[int]]) -> dict[tuple[int, ...], list[int]]:
    """The docID trie as prefix -> sorted next tokens allowed after it (the empty prefix included).
    Each docID must end with the EOS id (``training.encoding``); a prefix that ends a docID has no children.
    The trie is training's (``trie.build_trie``, which checks the docIDs)."""
    return {p: sorted(c) for p, c in build_trie(list(docids)).items()}


def allowed_tokens_fn(
    tries: Sequence[dict[tuple[int, ...], list[int]]], prompt_length: int, fallback: int
) -> Callable[[int, torch.Tensor], list[int]]:
    """``prefix_allowed_tokens_fn`` for ``generate``: the tokens the trie of batch row ``batch_id``
    allows after what was generated past ``prompt_length``. Never returns an empty list (recent
    transformers reject it): a prefix outside the trie (a finished hypothesis padded on) gets
    ``[fallback]``, the EOS/pad id."""

    def allowed(batch_id: int, input_ids: torch.Tensor) -> list[int]:
        prefix = tuple(input_ids[prompt_length:].tolist())
        return tries[batch_id].get(prefix) or [fallback]

    return allowed


def _match(generated: Sequence[int], table: dict[str, tuple[int, ...]], eos_id: int) -> str | None:
    """The candidate whose ids (with EOS) the generation starts with up to its first EOS, else None."""
    gen = list(generated)
    gen = gen[: gen.index(eos_id) + 1] if eos_id in gen else gen
    return {ids: d for d, ids in table.items()}.get(tuple(gen))


def _generate(model, tokenizer, prompt: Sequence[int], max_new_tokens: int, **kwargs: Any):
    """transformers ``generate`` on one prompt's ids (``encoding.prompt_ids``), deterministic."""
    ids = torch.tensor([list(prompt)], device=model_device(model))
    with eval_mode(model):  # inference mode: no gradients
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
            return_dict_in_generate=True,
            **kwargs,
        )
    return ids.shape[1], out


def greedy_decode(model, tokenizer, prompt: str, docids: Sequence[str]) -> dict[str, Any]:
    """Greedy decoding for ``max_i |T(d_i)| + 1`` steps (section 5.1's proxy; +1 for the EOS that
    ends a docID here). Returns ``{"text", "docid"}``: the decoded string (up to EOS) and the
    candidate it equals token for token, or None when the generation is not a valid docID."""
    docids = check_candidates(docids)
    table = docid_table(tokenizer, docids)
    steps = max(len(ids) for ids in table.values())
    n_prompt, out = _generate(model, tokenizer, prompt_ids(tokenizer, prompt), steps, num_beams=1)
    gen = out.sequences[0, n_prompt:].tolist()
    text = tokenizer.decode(gen, skip_special_tokens=True).strip()
    return {"text": text, "docid": _match(gen, table, tokenizer.eos_token_id)}


# transformers fills the slots of finished hypotheses it never found with this score (and a copy
# of another sequence): such a slot is no hypothesis.
EMPTY_SLOT_SCORE = -1e8


def _hypotheses(out, n_prompt: int, table: dict[str, tuple[int, ...]], eos_id: int) -> list[tuple[str | None, float]]:
    """``generate``'s returned hypotheses as ``(docID or None, log p)``, best first, without the
    empty slots (score <= ``EMPTY_SLOT_SCORE``)."""
    ranked = [
        (_match(seq[n_prompt:].tolist(), table, eos_id), float(score))
        for seq, score in zip(out.sequences, out.sequences_scores)
        if float(score) > EMPTY_SLOT_SCORE
    ]
    return sorted(ranked, key=lambda r: -r[1])


def beam_search(
    model, tokenizer, prompt: str, docids: Sequence[str], k: int, num_beams: int | None = None, constrained: bool = True
) -> list[tuple[str | None, float]]:
    """The top-k list of beam search with ``num_beams`` (default k, at least 2: one beam reports no
    sequence score) beams: ``[(docID or None, log p(d | q-bar)), ...]`` best first. Constrained to
    the trie of ``docids``, the list holds k distinct candidates: when transformers' beam search
    finishes fewer (it keeps a finished hypothesis only among the step's best ``num_beams``), it
    is re-run with twice the beams, up to twice the number of candidates, and the list may be
    shorter than k only if even that fails. Unconstrained, an entry that is no candidate (or an
    empty slot, scored ``-inf``) is ``None``."""
    docids = check_candidates(docids)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(docids):
        raise ValueError(f"k={k!r} must be an integer in [1, {len(docids)}] (the number of candidates)")
    num_beams = max(k, 2) if num_beams is None else num_beams
    if isinstance(num_beams, bool) or not isinstance(num_beams, (int, np.integer)) or num_beams < k:
        raise ValueError(f"num_beams={num_beams!r} must be an integer >= k={k}")
    num_beams = max(int(num_beams), 2)
    table = docid_table(tokenizer, docids)
    steps = max(len(ids) for ids in table.values())
    ids = prompt_ids(tokenizer, prompt)
    extra: dict[str, Any] = {"length_penalty": 0.0, "early_stopping": True, "output_scores": True}
    if constrained:
        extra["prefix_allowed_tokens_fn"] = allowed_tokens_fn(
            [prefix_children(table.values())], len(ids), tokenizer.eos_token_id
        )
    while True:
        n_prompt, out = _generate(
            model, tokenizer, ids, steps, num_beams=num_beams, num_return_sequences=num_beams, **extra
        )
        ranked = _hypotheses(out, n_prompt, table, tokenizer.eos_token_id)
        if not constrained:
            return (ranked + [(None, float("-inf"))] * k)[:k]
        found = [(d, s) for i, (d, s) in enumerate(ranked) if d is not None and d not in [e for e, _ in ranked[:i]]]
        if len(found) >= k or num_beams >= 2 * len(docids):
            return found[:k]
        num_beams = min(2 * num_beams, 2 * len(docids))
