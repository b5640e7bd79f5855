"""Candidate scoring of section 5.1 ("Task Setup"): each candidate docID d of a query is scored by
the mean log-probability of its tokens given the augmented prompt q-bar and its earlier tokens,

    score(d) = 1/|T(d)| * sum_k log p(T(d)[k] | T(q-bar), T(d)[:k]).

Token ids follow ``arrank.training.encoding``: an item is ``prompt_ids + docid_ids`` and ``docid_ids``
ends with EOS. Whether the end-of-docID token counts is not said in the paper: by default
(``include_eos=False``) it is not scored; ``include_eos=True`` adds log p(EOS | q-bar, d) to the
mean, which tells "cat" from "cats" (docs/design.md).

``score_naive`` runs one forward pass per candidate (the reference); ``score_prefix_shared`` gives
the same scores (~1e-6 in float32) with the prompt processed once (speeds: docs/measurements.md;
key/value-cache pitfalls: DEVELOPERS.md, "Known pitfalls"). A forward pass appends to a prompt
cache, so each batch gets a fresh expanded copy of it.

Every Appendix D.1 prompt opens with the same tokens (the chat template's system turn and the
instruction); ``score_queries`` runs that opening once per call (:func:`opening_cache`, where
:func:`opening_support` allows) and each query's prompt from there on, behind a copy of its cache.
A call computes its own opening, so scoring between optimizer steps (``evaluation.budgets``) never
reads keys and values of earlier weights.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import Counter
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import torch

from arrank.common.params import METHODS, choice, integer
from arrank.training.packing import mask_support, model_mask, segments_layout
from arrank.training.shared_prefix import MIN_SHARED, decoder_of, expand_cache, prefix_cache, shared_length


def scored_tokens(
    model,
    prompt: Sequence[int],
    candidates: Sequence[Sequence[int]],
    include_eos: bool = False,
    eos_id: int | None = None,
) -> list[list[int]]:
    """The tokens T(d) whose log-probs make each candidate's score (section 5.1), after checks.

    Each candidate is ``docid_ids`` (docID tokens + EOS). With ``include_eos=False`` (default) its
    last token must be EOS (``eos_id``, else the model config's EOS when it names one) and is
    dropped. Errors: empty prompt, no candidates, a candidate with no tokens (or only EOS when
    EOS is excluded). Ids come from the tokenizer (``encoding``) and are not re-checked: one outside
    the model's vocabulary fails in torch (an IndexError in the embedding, a RuntimeError in the
    gather of a candidate's log-probs; a device-side assert on CUDA).
    """
    if len(prompt) == 0:
        raise ValueError(
            "the prompt has no tokens: the first docID token is predicted from the "
            "prompt's last position (section 5.1), so a prompt is required"
        )
    if len(candidates) == 0:
        raise ValueError("no candidates to score: a query needs at least one candidate docID")
    eos = getattr(getattr(model, "config", None), "eos_token_id", None) if eos_id is None else eos_id
    eos = set() if eos is None else {int(e) for e in ([eos] if isinstance(eos, int) else eos)}  # config: int or list
    out = []
    for i, cand in enumerate(candidates):
        cand = [int(t) for t in cand]
        if not cand:
            raise ValueError(f"candidate {i} has no tokens")
        if not include_eos:
            if eos and cand[-1] not in eos:
                raise ValueError(
                    f"candidate {i} does not end with EOS {sorted(eos)} (ids {cand}); "
                    "candidates are docid_ids (docID + EOS), and include_eos=False drops "
                    "that EOS: pass include_eos=True to score every token"
                )
            cand = cand[:-1]
            if not cand:
                raise ValueError(f"candidate {i} is only EOS: it has no docID tokens to score")
        out.append(cand)
    return out


def model_device(model) -> torch.device:
    """The device of the model's parameters (``model.device`` for transformers models)."""
    dev = getattr(model, "device", None)
    return dev if isinstance(dev, torch.device) else next(model.parameters()).device


@contextlib.contextmanager
def eval_mode(model) -> Iterator[None]:
    """Eval mode and inference mode for scoring; the model's training flag is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) under softmax(logits), computed in float32 whatever the model's dtype.

    ``logits`` [..., V], ``targets`` [...] (long) -> [...] float32.
    """
    logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def score_naive(
    model, prompt: list[int], candidates: list[list[int]], include_eos: bool = False, *, eos_id: int | None = None
) -> np.ndarray:
    """Section 5.1 score of each candidate, one forward pass per candidate over prompt + candidate
    (the reference). ``candidates`` are ``encoding.docid_ids`` lists ending with ``eos_id``
    (default: the model config's EOS), scored without it unless ``include_eos``. Returns float64
    scores, one per candidate, in order.
    """
    targets = scored_tokens(model, prompt, candidates, include_eos, eos_id)
    device = model_device(model)
    scores = np.empty(len(targets), dtype=np.float64)
    with eval_mode(model):
        for i, tgt in enumerate(targets):
            # the last scored token is never an input; logits of the last len(tgt) inputs predict tgt
            ids = torch.tensor([list(prompt) + tgt[:-1]], dtype=torch.long, device=device)
            logits = model(input_ids=ids, use_cache=False, logits_to_keep=len(tgt)).logits[0]
            lp = token_logprobs(logits, torch.tensor(tgt, dtype=torch.long, device=device))
            scores[i] = lp.double().mean().item()
    return scores


class Opening(NamedTuple):
    """The tokens every scored prompt opens with and their key/value cache (one row), run once by
    :func:`opening_cache` for one scoring call; each forward gets a fresh expanded copy of ``cache``."""

    ids: list[int]
    cache: Any


def opening_support(model) -> tuple[bool, str]:
    """(whether ``score_queries`` runs the prompts' shared opening once for ``model``, why or why
    not): a transformers causal LM whose forward takes ``past_key_values`` and whose decoder stack is
    reachable (``shared_prefix.decoder_of``), not patched by Unsloth (its fast forward was not checked
    against a cache another forward made), and not on a GPU (measured on a CPU only, where time
    follows the tokens; on the H200 training's shared opening cost more than it saved, docs/gpu.md).
    Elsewhere every query runs its whole prompt, as before."""
    config = getattr(model, "config", None)
    if config is None:
        return False, f"{type(model).__name__} has no transformers config"
    if hasattr(config, "unsloth_version"):
        return False, "the model is patched by Unsloth, whose forward was not checked with a cache made by another pass"
    if getattr(config, "is_encoder_decoder", False):
        return False, "an encoder-decoder model has no causal prompt to continue"
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if "past_key_values" not in inspect.signature(base.forward).parameters:
        return False, f"{type(base).__name__}.forward takes no past_key_values"
    try:
        decoder_of(model)
    except (AttributeError, NotImplementedError):
        return False, f"{type(base).__name__} exposes no decoder stack (get_decoder)"
    if model_device(model).type == "cuda":
        return False, "on a GPU the opening's sharing is unmeasured (scoring passes there are overhead-bound)"
    return True, "the opening's key/value cache serves every query"


def opening_cache(model, prompts: Sequence[Sequence[int]]) -> Opening | None:
    """The opening every prompt of ``prompts`` shares (``shared_prefix.shared_length``: each prompt
    keeps at least its last token, whose logits predict a docID's first token; None below
    ``MIN_SHARED`` tokens or for fewer than two prompts), run once through the decoder in the
    current mode and precision. Call it in :func:`eval_mode`, once per scoring call: the cache holds
    the keys and values of the weights it ran with."""
    n = shared_length(prompts, [len(p) - 1 for p in prompts])
    if n < MIN_SHARED:
        return None
    ids = [int(t) for t in prompts[0][:n]]
    return Opening(ids, prefix_cache(model, torch.tensor([ids], dtype=torch.long, device=model_device(model)), 1))


def _opening_length(prompts: Sequence[Sequence[int]], opening: Opening | None) -> int:
    """How many leading tokens of every prompt the ``opening`` holds (0 without one); an error for a
    prompt that does not continue it by at least one token."""
    if opening is None:
        return 0
    n = len(opening.ids)
    for prompt in prompts:
        if len(prompt) <= n or list(prompt[:n]) != opening.ids:
            raise ValueError(f"a prompt does not continue the shared opening of {n} tokens by at least one token")
    return n


def _behind(model, opening: Opening | None, rows: int) -> dict[str, Any]:
    """The keywords of a forward of ``rows`` rows behind a fresh copy of the opening's cache."""
    return {} if opening is None else {"past_key_values": expand_cache(model, opening.cache, rows)}


def prompt_opening(model, prompt: Sequence[int], opening: Opening | None = None) -> Opening | None:
    """The prompt but its last token as an :class:`Opening`, run once (behind a copy of ``opening``'s
    cache where given; ``opening`` itself where the prompt adds nothing to it before its last token):
    the ``packed`` and ``padded`` layouts run every batch of candidates behind it, the prompt's last
    token first, whose logits predict each candidate's token 0."""
    n = _opening_length([prompt], opening)
    if len(prompt) - 1 <= n:
        return opening
    ids = torch.tensor([list(prompt[n:-1])], dtype=torch.long, device=model_device(model))
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1, **_behind(model, opening, 1))
    return Opening([int(t) for t in prompt[:-1]], out.past_key_values)


def _query_scores(logits: torch.Tensor, targets: list[list[int]]) -> torch.Tensor:
    """Scores of one query's candidates (float64 [B]) from the logits of its head rows: its prompt's
    last position (every candidate's token 0), then its blocks' positions (tokens 1..), in order."""
    device = logits.device
    starts = np.cumsum([0] + [len(t) - 1 for t in targets])  # block i's rows: starts[i] + 1 .. starts[i + 1]
    rows = [r for s, t in zip(starts, targets) for r in (0, *range(s + 1, s + len(t)))]
    owner = torch.tensor([i for i, t in enumerate(targets) for _ in t], device=device)
    tokens = torch.tensor([x for t in targets for x in t], dtype=torch.long, device=device)
    logprobs = token_logprobs(logits[torch.tensor(rows, device=device)], tokens).double()
    total = torch.zeros(len(targets), dtype=torch.float64, device=device).index_add(0, owner, logprobs)
    return total / torch.tensor([len(t) for t in targets], device=device)


def score_padded(
    model, prompt: Sequence[int], targets: list[list[int]], opening: Opening | None = None
) -> torch.Tensor:
    """Scores of candidates in right-padded rows, one a candidate, in one pass (float64 [B]): each row
    the prompt's tokens after ``opening`` (behind a copy of its cache expanded to the rows), then the
    candidate's inputs ``tgt[:-1]``, under a 2-D mask and position ids offset by the opening. No
    block mask: the layout for an attention that cannot read one (:func:`resolve_layout`)."""
    device = model_device(model)
    n = _opening_length([prompt], opening)
    rest, longest = [int(t) for t in prompt[n:]], max(map(len, targets))
    pad = getattr(model.config, "pad_token_id", None)
    pad = pad if isinstance(pad, int) else 0
    inputs = torch.tensor([rest + t[:-1] + [pad] * (longest - len(t)) for t in targets], device=device)
    nexts = torch.tensor([t + [0] * (longest - len(t)) for t in targets], device=device)
    lengths = torch.tensor([len(t) for t in targets], device=device)
    valid = torch.arange(longest, device=device)[None, :] < lengths[:, None]  # logits L-1+k predict t[k]
    cached = torch.ones((len(targets), n + len(rest) - 1), dtype=torch.long, device=device)
    logits = model(
        input_ids=inputs,
        attention_mask=torch.cat([cached, valid.long()], 1),
        position_ids=(n + torch.arange(inputs.shape[1], device=device))[None, :].expand(len(targets), -1),
        use_cache=opening is not None,
        logits_to_keep=longest,
        **_behind(model, opening, len(targets)),
    ).logits
    return (token_logprobs(logits, nexts).double() * valid).sum(1) / lengths


def query_rows(
    prompts: Sequence[Sequence[int]], targets: Sequence[list[list[int]]], pad_id: int
) -> dict[str, torch.Tensor]:
    """The batch of :func:`score_query_batch`: one right-padded row per query holding its prompt and
    then every candidate's inputs ``tgt[:-1]`` as a block (the ``one_pass`` layout's row), with the
    boolean (B, 1, L, L) block mask ``allowed``, ``position_ids``, and the (row, position) pairs
    ``head_rows`` whose logits predict a scored token: the prompt's last position (every candidate's
    token 0), then each block's positions (tokens 1..)."""

    rows = [list(p) + [x for t in tgt for x in t[:-1]] for p, tgt in zip(prompts, targets)]
    input_ids = torch.nn.utils.rnn.pad_sequence([torch.tensor(r) for r in rows], batch_first=True, padding_value=pad_id)
    B, L = input_ids.shape
    allowed = torch.zeros((B, 1, L, L), dtype=torch.bool)
    positions = torch.zeros((B, L), dtype=torch.long)
    head_row, head_pos = [], []  # the (row, position) pairs of head_rows
    for b, (row, prompt, tgt) in enumerate(zip(rows, prompts, targets)):
        P, n = len(prompt), len(row)
        blocks = [len(t) - 1 for t in tgt if len(t) > 1]
        # single-token candidates only: the prompt, causally, as its last token were a block of its own
        allowed[b, 0], positions[b] = segments_layout([(P, blocks)] if blocks else [(P - 1, [1])], L)
        head_row += [b] * (n - P + 1)
        head_pos += list(range(P - 1, n))
    return {
        "input_ids": input_ids,
        "allowed": allowed,
        "position_ids": positions,
        "head_rows": (torch.tensor(head_row, dtype=torch.long), torch.tensor(head_pos, dtype=torch.long)),
    }


def score_query_batch(
    model, prompts: Sequence[Sequence[int]], targets: Sequence[list[list[int]]], opening: Opening | None = None
) -> list[torch.Tensor]:
    """Section 5.1 scores of SEVERAL queries in one forward pass (float64, one tensor per query, its
    candidates in order; in eval and inference mode): the rows of :func:`query_rows`, the model's
    head applied only where a scored token is predicted (``supervised_head.head_at``). ``targets`` are each query's
    :func:`scored_tokens`. The scores of ``score_prefix_shared`` query by query, up to float rounding;
    on a GPU it replaces a query's two small passes by a share of one large one (docs/gpu.md).
    With an ``opening`` every row starts after it, behind its cache expanded to the rows (a view):
    the mask's rows, the position ids and the head positions from there on; rows stay right-padded,
    so a query's positions are those it has alone."""
    from arrank.training.supervised_head import head_at

    if len(prompts) != len(targets) or not prompts:
        raise ValueError(f"need one target list per prompt, got {len(prompts)} prompts and {len(targets)} target lists")
    device = model_device(model)
    pad = getattr(model.config, "pad_token_id", None)
    batch = query_rows(prompts, targets, pad if isinstance(pad, int) else 0)
    n = _opening_length(prompts, opening)
    rows = (batch["head_rows"][0].to(device), (batch["head_rows"][1] - n).to(device))
    with eval_mode(model), head_at(model, rows):
        logits = model(
            input_ids=batch["input_ids"][:, n:].to(device),
            attention_mask=model_mask(model, batch["allowed"][:, :, n:].to(device)),
            position_ids=batch["position_ids"][:, n:].to(device),
            use_cache=opening is not None,
            **_behind(model, opening, len(prompts)),
        ).logits  # (N, V): one row per head position, query by query
    rows_per_query = [1 + sum(len(t) - 1 for t in tgt) for tgt in targets]  # its prompt's last position, its blocks
    return [_query_scores(part, tgt) for part, tgt in zip(logits.split(rows_per_query), targets)]


LAYOUTS = ("auto", "packed", "padded", "one_pass")


def resolve_layout(model, layout: str, opening: bool = False) -> str:
    """``auto`` -> ``packed`` when the model takes the block mask (``packing.mask_support``:
    sdpa/eager attention), or ``one_pass`` behind a shared ``opening`` (the prompt's rest and the
    candidates in one pass, not two: faster on SmolLM2, docs/measurements.md), else ``padded``; an
    explicit packed layout on a model that cannot take the mask is an error naming the reason."""
    choice(*LAYOUTS)("layout", layout)
    ok, why = mask_support(model)
    if layout == "auto":
        return ("one_pass" if opening else "packed") if ok else "padded"
    if layout in ("packed", "one_pass") and not ok:
        raise ValueError(f"layout={layout!r} needs the packed block mask, but {why}; use layout='padded'")
    return layout


def score_prefix_shared(
    model,
    prompt: list[int],
    candidates: list[list[int]],
    include_eos: bool = False,
    batch_size: int | None = None,
    layout: str = "auto",
    *,
    eos_id: int | None = None,
    opening: Opening | None = None,
) -> np.ndarray:
    """Section 5.1 score of each candidate, with the prompt's key/value cache shared: the inputs,
    default and scores of ``score_naive`` (~1e-6 in float32). Candidates run ``batch_size`` at a
    time (None: all at once) in the ``layout`` ``"packed"`` (the prompt but its last token run once,
    :func:`prompt_opening`; each batch behind it in one row, the block mask of
    :func:`score_query_batch`), ``"padded"`` (the same prompt run once; each batch in right-padded
    rows, :func:`score_padded`) or ``"one_pass"`` (no prompt cache: the prompt and the batch in one
    row, once per batch); ``"auto"`` (``resolve_layout``) picks packed when the model's attention
    reads 4-D masks (sdpa or eager). With an ``opening`` (:func:`opening_cache`) the prompt's tokens
    after it run, behind its cache (``auto``: one_pass).
    """
    targets = scored_tokens(model, prompt, candidates, include_eos, eos_id)
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size={batch_size!r} must be a positive integer or None")
    layout = resolve_layout(model, layout, opening is not None)
    step = batch_size or len(targets)
    with eval_mode(model):
        if layout != "one_pass":
            opening = prompt_opening(model, prompt, opening)
        parts = [
            score_padded(model, prompt, targets[s : s + step], opening)
            if layout == "padded"
            else score_query_batch(model, [prompt], [targets[s : s + step]], opening)[0]
            for s in range(0, len(targets), step)
        ]
    return torch.cat(parts).cpu().numpy()


def check_candidates(docids: Sequence[str], where: str = "") -> list[str]:
    """A query's candidate docIDs as a list, with clear errors (after ``where``) for a str, none or
    duplicates; scoring and decoding (``evaluation.decoding``) take them alike."""
    if isinstance(docids, str):
        raise TypeError(f"{where}candidate docIDs must be a list of str, got the str {docids!r}")
    docids = list(docids)
    if not docids:
        raise ValueError(f"{where}empty candidate list: a query needs at least one candidate docID")
    if dups := sorted(d for d, count in Counter(docids).items() if count > 1):
        raise ValueError(f"{where}duplicate candidate docIDs: {dups}")
    return docids


def resolve_query_batch(model, query_batch: int | None, method: str = "prefix_shared", layout: str = "auto") -> int:
    """How many queries ``score_queries`` scores in one forward pass: ``query_batch`` when given
    (an integer >= 1), else :data:`QUERY_BATCH_GPU` on a GPU with layout ``auto`` or ``one_pass`` and
    1 otherwise (docs/gpu.md); 1 for the naive method and wherever the model cannot take the block
    mask (``packing.mask_support``). A bad ``query_batch`` or ``layout`` is refused here too, as at
    the notebooks' edge: a direct call must not fall back to one query a pass silently."""
    integer(1, optional=True)("query_batch", query_batch)
    choice(*LAYOUTS)("layout", layout)
    if method == "naive" or not mask_support(model)[0]:
        return 1
    if query_batch is None:  # auto: an explicit per-query layout keeps one query a pass
        batched = layout in ("auto", "one_pass") and model_device(model).type == "cuda"
        return QUERY_BATCH_GPU if batched else 1
    if query_batch > 1 and layout not in ("auto", "one_pass"):
        raise ValueError(f"query_batch={query_batch} scores queries in the one_pass layout, not layout={layout!r}")
    return query_batch


QUERY_BATCH_GPU = 32


def encode_item(tokenizer, index: int, item) -> tuple[list[int], list[list[int]]]:
    """(prompt ids, candidate docid ids) of one (prompt, docIDs) item (``encoding.prompt_ids`` /
    ``encoding.docid_table``), with clear errors naming the item: no docIDs, duplicates, a docID with
    no tokens or sharing its tokens."""
    from arrank.training.encoding import docid_table, prompt_ids

    prompt, docids = item
    where = f"item {index} (prompt {prompt[-60:]!r}): "
    docids = check_candidates(docids, where)
    try:
        table = docid_table(tokenizer, docids)
    except ValueError as err:
        raise ValueError(f"{where}{err}") from None
    return prompt_ids(tokenizer, prompt), [list(table[d]) for d in docids]


def score_queries(
    model,
    tokenizer,
    items: Sequence[tuple[str, list[str]]],
    include_eos: bool = False,
    method: str = "prefix_shared",
    progress: bool = True,
    batch_size: int | None = None,
    layout: str = "auto",
    query_batch: int | None = None,
    share_opening: bool = True,
) -> list[np.ndarray]:
    """Section 5.1 scores of every query's candidate docIDs, one float64 array per item in its
    docID order. Each item is (augmented prompt q-bar as text, candidate docIDs), encoded with
    ``encoding.prompt_ids`` / ``encoding.docid_ids``; ``method``: ``"prefix_shared"`` (default;
    ``batch_size`` and ``layout`` go to ``score_prefix_shared``) or ``"naive"``. ``query_batch``
    queries share one forward pass (``score_query_batch``; None: ``resolve_query_batch``).
    ``share_opening`` (prefix_shared only): the tokens every prompt opens with run once for the call
    (:func:`opening_cache`) where :func:`opening_support` allows; False runs every prompt whole
    (the same scores up to float rounding). Errors name the item: duplicate docIDs, an empty
    candidate list, a docID with no tokens or sharing its tokens.
    """
    from tqdm.auto import tqdm

    choice(*METHODS)("method", method)
    encoded = [encode_item(tokenizer, i, item) for i, item in enumerate(items)]
    group = resolve_query_batch(model, query_batch, method, layout)
    if batch_size is not None:  # it batches one query's candidates: queries go one at a time
        if group > 1 and query_batch is not None:
            raise ValueError(
                f"batch_size={batch_size} batches one query's candidates; it cannot go with query_batch={query_batch}"
            )
        group = 1
    eos = tokenizer.eos_token_id
    targets = [scored_tokens(model, ids, cands, include_eos, eos) for ids, cands in encoded]
    results: list[np.ndarray] = []
    with tqdm(total=len(encoded), desc=f"scoring ({method})", unit="query", disable=not progress) as bar:
        opening = None
        if share_opening and method != "naive" and opening_support(model)[0]:
            with eval_mode(model):
                opening = opening_cache(model, [ids for ids, _ in encoded])
        lengths = [len(ids) + sum(len(t) - 1 for t in tg) for (ids, _), tg in zip(encoded, targets)]
        for chunk in query_groups(lengths, group, PASS_TOKENS):
            ids, cands = encoded[chunk[0]]
            if len(chunk) == 1 and method == "naive":  # group is 1 for the naive method
                results.append(score_naive(model, ids, cands, include_eos, eos_id=eos))
            elif len(chunk) == 1:  # one query a pass (or too long to share one): score_prefix_shared's layout
                results.append(
                    score_prefix_shared(model, ids, cands, include_eos, batch_size, layout, eos_id=eos, opening=opening)
                )
            else:
                scores = score_query_batch(model, [encoded[i][0] for i in chunk], [targets[i] for i in chunk], opening)
                results += [x.cpu().numpy() for x in scores]
            bar.update(len(chunk))
    return results


PASS_TOKENS = 16384  # the most padded tokens (rows x the longest row) one batched scoring pass takes


def query_groups(lengths: Sequence[int], most: int, tokens: int = PASS_TOKENS) -> list[list[int]]:
    """Consecutive queries grouped for :func:`score_query_batch`: at most ``most`` a pass and at most
    ``tokens`` padded tokens (rows x longest row), so that long prompts (ESCI's D.2 lists up to 100
    titles) get fewer queries a pass; a query longer than ``tokens`` goes alone."""
    groups: list[list[int]] = []
    longest = 0
    for i, n in enumerate(lengths):
        if groups and len(groups[-1]) < most and max(longest, n) * (len(groups[-1]) + 1) <= tokens:
            groups[-1].append(i)
            longest = max(longest, n)
        else:
            groups.append([i])
            longest = n
    return groups
