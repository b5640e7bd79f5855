"""Candidate scoring of section 5.1: score(d) = mean over d's tokens of log p(token | q-bar, d_<k).

A tiny random Llama whose weights are drawn large (std 0.3 instead of 0.02), so its next-token
distributions depend strongly on the context: a wrong mask, position id or cache reuse moves the
scores by far more than the 1e-4 tolerance (checked by ``test_scores_depend_on_context``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arrank.evaluation import scoring
from arrank.training.models import build_tiny_model

VOCAB = 97
EOS = 2  # LlamaConfig's default eos_token_id, used when no tokenizer is given
TOL = 1e-4


def sharp_tiny_model(vocab: int = VOCAB, seed: int = 0, **sizes):
    """A tiny random Llama with large weights (context-sensitive outputs), in float32."""
    sizes = {"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64, **sizes}
    model = build_tiny_model(vocab, seed=seed, **sizes)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model.eval()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return sharp_tiny_model()


def rand_ids(rng: np.random.Generator, n: int) -> list[int]:
    """n random non-special token ids."""
    return rng.integers(4, VOCAB, n).tolist()


def candidate_set(rng: np.random.Generator, lengths: list[int]) -> list[list[int]]:
    """docid_ids-like candidates: ``n`` docID tokens + EOS for each n in lengths."""
    return [rand_ids(rng, n) + [EOS] for n in lengths]


def plain_logprobs(model, prompt: list[int], cand: list[int]) -> np.ndarray:
    """log p of each candidate token from ONE plain forward over prompt + candidate (float64)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + cand])).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    P = len(prompt)
    return np.array([lp[P - 1 + k, t].item() for k, t in enumerate(cand)])


CASES = [  # (prompt length, docID token counts per candidate)
    (1, [3]),  # n_q = 1, a one-token prompt
    (7, [1]),  # n_q = 1, a one-token docID (only the prompt's logits)
    (12, [1, 1, 1]),  # all one-token docIDs: no candidate pass at all
    (25, [4, 1, 6, 2, 2, 9]),  # mixed lengths
    (60, [5] * 10),  # equal lengths
    (33, [2, 8, 3, 3, 1, 7, 4, 5, 6, 2, 2, 3, 9, 1, 4, 4, 6]),
]


# --------------------------------------------------------------------------- equality of the methods


@pytest.mark.parametrize("include_eos", [False, True])
@pytest.mark.parametrize("layout", ["packed", "padded", "one_pass"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_prefix_shared_equals_naive(model, case, layout, include_eos):
    rng = np.random.default_rng(case)
    n_prompt, lengths = CASES[case]
    prompt, cands = rand_ids(rng, n_prompt), candidate_set(rng, lengths)
    naive = scoring.score_naive(model, prompt, cands, include_eos=include_eos)
    for batch_size in (None, 1, 4):
        shared = scoring.score_prefix_shared(
            model, prompt, cands, include_eos=include_eos, batch_size=batch_size, layout=layout
        )
        assert shared.shape == (len(cands),) and shared.dtype == np.float64
        assert np.abs(shared - naive).max() <= TOL, (batch_size, shared - naive)


@pytest.mark.parametrize("include_eos", [False, True])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_query_batch_equals_naive(model, include_eos, attention):
    """Every CASE in one forward pass (rows of unequal length, right-padded; a query whose docIDs
    are all one token has no block): each query's scores are its naive ones."""
    model.config._attn_implementation = attention
    try:
        rng = np.random.default_rng(11)
        queries = [(rand_ids(rng, n), candidate_set(rng, lengths)) for n, lengths in CASES]
        targets = [scoring.scored_tokens(model, p, c, include_eos) for p, c in queries]
        with torch.inference_mode():
            got = scoring.score_query_batch(model, [p for p, _ in queries], targets)
        for (prompt, cands), scores in zip(queries, got):
            naive = scoring.score_naive(model, prompt, cands, include_eos=include_eos)
            assert scores.dtype == torch.float64 and scores.shape == (len(cands),)
            assert np.abs(scores.numpy() - naive).max() <= TOL, scores.numpy() - naive
    finally:
        model.config._attn_implementation = "sdpa"


def test_query_rows_layout():
    """Rows, mask, positions and head positions of two queries: prompt 3 + blocks [2, 1] (docIDs of
    3, 2 and 1 tokens), prompt 2 + one docID of 1 token (no block)."""
    batch = scoring.query_rows([[5, 6, 7], [8, 9]], [[[10, 11, 12], [13, 14], [15]], [[16]]], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 10, 11, 13], [8, 9, 0, 0, 0, 0]]
    assert batch["position_ids"].tolist() == [[0, 1, 2, 3, 4, 3], [0, 1, 0, 0, 0, 0]]
    rows, positions = batch["head_rows"]
    assert rows.tolist() == [0, 0, 0, 0, 1] and positions.tolist() == [2, 3, 4, 5, 1]
    allowed = batch["allowed"][:, 0].int().tolist()
    assert allowed[0][5] == [1, 1, 1, 0, 0, 1]  # the second block sees the prompt and itself, not block 1
    assert allowed[0][4] == [1, 1, 1, 1, 1, 0]
    assert allowed[1][1] == [1, 1, 0, 0, 0, 0] and allowed[1][3] == [0, 0, 0, 1, 0, 0]  # padding: itself


def test_prefix_shared_equals_naive_default_size_model():
    """The quick profile's size (hidden 128, 4 layers, 4 heads), default (auto) layout."""
    model = sharp_tiny_model(vocab=500, hidden=128, layers=4, heads=4, intermediate=384)
    rng = np.random.default_rng(7)
    prompt = rng.integers(4, 500, 80).tolist()
    cands = [rng.integers(4, 500, n).tolist() + [EOS] for n in (3, 7, 1, 4, 5, 8, 2, 6, 3, 4, 5)]
    naive = scoring.score_naive(model, prompt, cands)
    assert np.abs(scoring.score_prefix_shared(model, prompt, cands) - naive).max() <= TOL


def test_scores_depend_on_context(model):
    """The tests above have power: the prompt and the earlier docID tokens matter far beyond TOL."""
    rng = np.random.default_rng(3)
    prompt, cands = rand_ids(rng, 20), candidate_set(rng, [5, 5, 5])
    base = scoring.score_naive(model, prompt, cands)
    assert np.abs(scoring.score_naive(model, prompt[1:], cands) - base).min() > 1e-2
    swapped = [c[1:2] + c[:1] + c[2:] for c in cands]  # same tokens, two swapped
    assert np.abs(scoring.score_naive(model, prompt, swapped) - base).min() > 1e-2


def test_prompt_opening_reused_not_corrupted(model):
    """The prompt's cache serves many batches (batch_size=1) and repeated calls identically."""
    rng = np.random.default_rng(11)
    prompt, cands = rand_ids(rng, 15), candidate_set(rng, [3, 6, 2, 4])
    first = scoring.score_prefix_shared(model, prompt, cands, batch_size=1, layout="padded")
    again = scoring.score_prefix_shared(model, prompt, cands, batch_size=1, layout="padded")
    np.testing.assert_array_equal(first, again)
    with torch.inference_mode():
        opening = scoring.prompt_opening(model, prompt)
        before = [k.clone() for k, _, *_ in opening.cache]
        targets = scoring.scored_tokens(model, prompt, cands)
        for _ in range(2):
            scoring.score_padded(model, prompt, targets, opening)
            scoring.score_query_batch(model, [prompt], [targets], opening)
        assert opening.cache.get_seq_length() == len(prompt) - 1
        assert all(torch.equal(b, k) for b, (k, _, *_) in zip(before, opening.cache))


# --------------------------------------------------------------------------- the arithmetic


def test_score_is_mean_of_plain_forward_logprobs(model):
    rng = np.random.default_rng(5)
    prompt, cands = rand_ids(rng, 18), candidate_set(rng, [4, 1, 6])
    for include_eos in (False, True):
        want = [plain_logprobs(model, prompt, c)[: None if include_eos else -1].mean() for c in cands]
        for got in (
            scoring.score_naive(model, prompt, cands, include_eos),
            scoring.score_prefix_shared(model, prompt, cands, include_eos),
        ):
            np.testing.assert_allclose(got, want, atol=TOL, rtol=0)


def test_include_eos_arithmetic(model):
    """With n docID tokens: score_eos = (n * score + log p(EOS | q-bar, d)) / (n + 1)."""
    rng = np.random.default_rng(9)
    prompt, doc = rand_ids(rng, 10), rand_ids(rng, 3)
    cand = doc + [EOS]
    with torch.no_grad():  # log p(EOS | prompt, docID) by hand, from the logits at the docID's end
        logits = model(input_ids=torch.tensor([prompt + doc])).logits[0, -1].double()
    lp_eos = (logits[EOS] - torch.logsumexp(logits, 0)).item()
    for fn in (scoring.score_naive, scoring.score_prefix_shared):
        without = fn(model, prompt, [cand])[0]
        with_eos = fn(model, prompt, [cand], include_eos=True)[0]
        assert with_eos == pytest.approx((3 * without + lp_eos) / 4, abs=TOL)
        assert with_eos - without == pytest.approx((lp_eos - without) / 4, abs=TOL)


def test_training_mode_restored_and_dtype_safe():
    model = sharp_tiny_model(seed=1).train()
    rng = np.random.default_rng(2)
    prompt, cands = rand_ids(rng, 12), candidate_set(rng, [2, 5, 3])
    ref = scoring.score_naive(model, prompt, cands)
    assert model.training
    half = sharp_tiny_model(seed=1).to(torch.bfloat16)
    for fn in (scoring.score_naive, scoring.score_prefix_shared):
        got = fn(half, prompt, cands)
        assert got.dtype == np.float64 and np.isfinite(got).all()
        assert np.abs(got - ref).max() < 0.5  # bf16 weights: close, not equal


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(model):
    rng = np.random.default_rng(4)
    prompt, cands = rand_ids(rng, 30), candidate_set(rng, [3, 7, 1, 5])
    ref = scoring.score_naive(model, prompt, cands)
    gpu = sharp_tiny_model().cuda()
    for layout in ("packed", "padded"):
        assert np.abs(scoring.score_prefix_shared(gpu, prompt, cands, layout=layout) - ref).max() <= 1e-3
    assert np.abs(scoring.score_naive(gpu, prompt, cands) - ref).max() <= 1e-3
    assert scoring.resolve_query_batch(gpu, None) == scoring.QUERY_BATCH_GPU
    assert scoring.resolve_query_batch(gpu, None, layout="packed") == 1  # a per-query layout asked for
    targets = [scoring.scored_tokens(gpu, prompt, cands), scoring.scored_tokens(gpu, prompt[:9], cands[:2])]
    with torch.inference_mode():
        first, _ = scoring.score_query_batch(gpu, [prompt, prompt[:9]], targets)
    assert np.abs(first.cpu().numpy() - ref).max() <= 1e-3


# --------------------------------------------------------------------------- score_queries


NAMES = [
    "dog.n.01",
    "canine.n.02",
    "carnivore.n.01",
    "placental.n.01",
    "mammal.n.01",
    "vertebrate.n.01",
    "animal.n.01",
    "cat.n.01",
    "cats.n.01",
    "feline.n.01",
    "organism.n.01",
]


@pytest.fixture(scope="module")
def tok_model():
    from arrank.data.prompts import query_rng, wordnet_prompt
    from arrank.training.tokenizer import train_bpe

    texts = NAMES + [wordnet_prompt("dog.n.01", NAMES, query_rng(0, "x"), name="wordnet_short")]
    tok = train_bpe(texts, 80)
    return tok, sharp_tiny_model(vocab=len(tok), seed=3)


def test_score_queries_matches_low_level(tok_model):
    from arrank.data.prompts import query_rng, wordnet_prompt
    from arrank.training.encoding import docid_ids, prompt_ids

    tok, model = tok_model
    items = []
    for q, docs in [
        ("dog.n.01", NAMES[1:7]),
        ("cat.n.01", ["feline.n.01"]),
        ("cats.n.01", ["cat.n.01", "animal.n.01", "organism.n.01"]),
    ]:
        items.append((wordnet_prompt(q, docs, query_rng(0, q), name="wordnet_short"), list(docs)))
    shared = scoring.score_queries(model, tok, items, progress=False)
    naive = scoring.score_queries(model, tok, items, method="naive", progress=False)
    assert [len(s) for s in shared] == [6, 1, 3]
    for (prompt, docs), s, n in zip(items, shared, naive):
        want = scoring.score_naive(model, prompt_ids(tok, prompt), [docid_ids(tok, d) for d in docs])
        np.testing.assert_allclose(s, want, atol=TOL, rtol=0)
        np.testing.assert_allclose(n, want, atol=1e-12, rtol=0)
    eos = scoring.score_queries(model, tok, items[:1], include_eos=True, progress=False)[0]
    assert np.abs(eos - shared[0]).max() > 1e-6


def test_score_queries_passes_include_eos_and_the_tokenizers_eos_to_every_path(tok_model):
    """Section 5.1's mean over T(d), with the EOS that ends a docID included on request, the same by
    every path of ``score_queries``; the EOS is the tokenizer's, even where the model's config names
    another (a docID's last token is the tokenizer's EOS, ``encoding.docid_ids``)."""
    from arrank.data.prompts import query_rng, wordnet_prompt
    from arrank.training.encoding import docid_ids, prompt_ids

    tok, model = tok_model
    items = [(wordnet_prompt(q, d, query_rng(0, q), name="wordnet_short"), d) for q, d in [
        ("dog.n.01", NAMES[1:5]), ("cat.n.01", ["feline.n.01", "animal.n.01"])]]  # fmt: skip
    eos = tok.eos_token_id
    want = {
        flag: [
            scoring.score_naive(model, prompt_ids(tok, p), [docid_ids(tok, d) for d in docs], flag, eos_id=eos)
            for p, docs in items
        ]
        for flag in (False, True)
    }
    for how in ({}, {"method": "naive"}, {"query_batch": 2}):
        got = scoring.score_queries(model, tok, items, include_eos=True, progress=False, **how)
        assert max(np.abs(g - w).max() for g, w in zip(got, want[True])) <= TOL, how
    config_eos, model.config.eos_token_id = model.config.eos_token_id, eos + 1
    try:
        for how in ({}, {"method": "naive"}, {"query_batch": 2}):
            got = scoring.score_queries(model, tok, items, progress=False, **how)
            assert max(np.abs(g - w).max() for g, w in zip(got, want[False])) <= TOL, how
    finally:
        model.config.eos_token_id = config_eos


def test_score_queries_query_batch(tok_model):
    """Queries two or three to a pass give the scores of one at a time; a LoRA (peft) model, whose
    head sits under peft's wrapper, and scoring under ``precision.inference`` (a second head hook)
    too."""
    from peft import LoraConfig, get_peft_model

    from arrank.data.prompts import query_rng, wordnet_prompt
    from arrank.training.precision import inference

    tok, model = tok_model
    groups = [NAMES[1:7], ["feline.n.01"], ["cat.n.01", "animal.n.01"], NAMES[:3], NAMES[4:], ["dog.n.01"]]
    items = [(wordnet_prompt(q, d, query_rng(0, q), name="wordnet_short"), d) for q, d in zip(NAMES, groups)]
    one = scoring.score_queries(model, tok, items, progress=False, query_batch=1)
    for group in (2, 3, 5, 8):  # 5: the last query alone, scored per query
        got = scoring.score_queries(model, tok, items, progress=False, query_batch=group)
        assert [len(g) for g in got] == [len(d) for d in groups]
        assert max(np.abs(g - o).max() for g, o in zip(got, one)) <= TOL
    lora = get_peft_model(
        sharp_tiny_model(vocab=len(tok), seed=3),
        LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    ).eval()
    with inference(lora, "fp32"):
        one = scoring.score_queries(lora, tok, items, progress=False, query_batch=1)
        got = scoring.score_queries(lora, tok, items, progress=False, query_batch=4)
    assert max(np.abs(g - o).max() for g, o in zip(got, one)) <= TOL
    plain = scoring.score_queries(model, tok, items, progress=False, query_batch=1)
    assert max(np.abs(g - o).max() for g, o in zip(one, plain)) > 1e-3  # the adapters did change the scores


def test_query_groups_cap_queries_and_padded_tokens():
    # 100 x 2 fits 400 tokens, a third row of 300 would pad to 900; 300 then 300 x 2 > 400; 50 x 3 fits
    assert scoring.query_groups([100, 100, 300, 50, 50, 50], most=3, tokens=400) == [[0, 1], [2], [3, 4, 5]]
    assert scoring.query_groups([50] * 7, most=3, tokens=10**6) == [[0, 1, 2], [3, 4, 5], [6]]
    assert scoring.query_groups([500, 10, 10], most=8, tokens=400) == [[0], [1, 2]]  # too long: alone
    assert scoring.query_groups([5, 5], most=1) == [[0], [1]]


def test_resolve_query_batch(model):
    assert scoring.resolve_query_batch(model, None) == 1  # a CPU: one query a pass (docs/measurements.md, "Scoring")
    assert scoring.resolve_query_batch(model, 8) == 8
    assert scoring.resolve_query_batch(model, 8, method="naive") == 1
    with pytest.raises(ValueError, match="query_batch=4 scores queries in the one_pass layout, not layout='padded'"):
        scoring.resolve_query_batch(model, 4, layout="padded")
    for bad in (0, -2, True, 2.0):  # refused, not taken as one query a pass
        with pytest.raises(ValueError, match="query_batch="):
            scoring.resolve_query_batch(model, bad)
    with pytest.raises(ValueError, match="layout='ragged' is not allowed"):
        scoring.resolve_query_batch(model, None, method="naive", layout="ragged")
    flash = sharp_tiny_model()
    flash.config._attn_implementation = "flash_attention_2"
    assert scoring.resolve_query_batch(flash, 8) == 1  # no block mask: one query at a time


def test_score_queries_errors(tok_model):
    tok, model = tok_model
    with pytest.raises(ValueError, match=r"duplicate candidate docIDs: \['cat.n.01', 'dog.n.01'\]"):
        scoring.score_queries(model, tok, [("p", ["dog.n.01", "cat.n.01", "dog.n.01", "cat.n.01"])], progress=False)
    with pytest.raises(ValueError, match="item 1 .*empty candidate list"):
        scoring.score_queries(model, tok, [("p", ["dog.n.01"]), ("q", [])], progress=False)
    with pytest.raises(ValueError, match="item 0 .*encodes to no tokens"):
        scoring.score_queries(model, tok, [("p", ["dog.n.01", " "])], progress=False)
    with pytest.raises(TypeError, match="list of str"):
        scoring.score_queries(model, tok, [("p", "dog.n.01")], progress=False)
    with pytest.raises(ValueError, match="method"):
        scoring.score_queries(model, tok, [("p", ["dog.n.01"])], method="beam", progress=False)
    with pytest.raises(
        ValueError, match="batch_size=2 batches one query's candidates; it cannot go with query_batch=4"
    ):
        scoring.score_queries(model, tok, [("p", ["dog.n.01"])], progress=False, batch_size=2, query_batch=4)


def test_low_level_errors(model):
    prompt, ok = [5, 6, 7], [[8, 9, EOS]]
    for fn in (scoring.score_naive, scoring.score_prefix_shared):
        with pytest.raises(ValueError, match="no candidates"):
            fn(model, prompt, [])
        with pytest.raises(ValueError, match="candidate 1 has no tokens"):
            fn(model, prompt, [[8, EOS], []])
        with pytest.raises(ValueError, match="only EOS"):
            fn(model, prompt, [[EOS]])
        with pytest.raises(ValueError, match="does not end with EOS"):
            fn(model, prompt, [[8, 9]])
        with pytest.raises(ValueError, match="prompt has no tokens"):
            fn(model, [], ok)
        assert np.isfinite(fn(model, prompt, [[EOS]], include_eos=True)).all()  # EOS alone is scorable
        # another end token named explicitly (score_queries passes the tokenizer's EOS)
        np.testing.assert_allclose(
            fn(model, prompt, [[8, 9, 11]], eos_id=11), fn(model, prompt, [[8, 9, EOS]]), atol=TOL, rtol=0
        )
    with pytest.raises(ValueError, match="batch_size"):
        scoring.score_prefix_shared(model, prompt, ok, batch_size=0)
    with pytest.raises(ValueError, match="layout"):
        scoring.score_prefix_shared(model, prompt, ok, layout="ragged")


def test_packed_layouts_need_a_mask_reading_attention():
    """Flash attention ignores a 4-D mask: auto falls back to padded, an explicit packed layout
    is refused with the reason (arrank.training.packing.mask_support)."""
    flash = sharp_tiny_model()
    flash.config._attn_implementation = "flash_attention_2"
    assert scoring.resolve_layout(flash, "auto") == "padded"
    for layout in ("packed", "one_pass"):
        with pytest.raises(ValueError, match="flash_attention_2.*layout='padded'"):
            scoring.resolve_layout(flash, layout)
    eager = sharp_tiny_model()
    eager.config._attn_implementation = "eager"  # the additive float form of the same mask
    rng = np.random.default_rng(5)
    prompt, cands = rand_ids(rng, 9), candidate_set(rng, [3, 1, 4])
    naive = scoring.score_naive(eager, prompt, cands)
    for layout in ("packed", "one_pass"):
        assert np.abs(scoring.score_prefix_shared(eager, prompt, cands, layout=layout) - naive).max() <= TOL


# --------------------------------------------------------------------------- the shared opening


OPENING_QUERIES = [  # (query, candidates): D.1 prompts all open with the same instruction
    ("dog.n.01", NAMES[1:7]),
    ("cat.n.01", ["feline.n.01", "carnivore.n.01"]),
    ("cats.n.01", ["cat.n.01", "animal.n.01", "organism.n.01"]),
    ("feline.n.01", NAMES[2:6]),
    ("canine.n.02", ["carnivore.n.01"]),
]


@pytest.fixture(scope="module")
def opening_model():
    """A BPE of 200 tokens over Appendix D.1 prompts (their instruction: ~100 tokens every prompt
    opens with; docIDs of several tokens) and a sharp tiny model over it; the items to score."""
    from arrank.data.prompts import query_rng, wordnet_prompt
    from arrank.training.tokenizer import train_bpe

    items = [(wordnet_prompt(q, d, query_rng(0, q)), list(d)) for q, d in OPENING_QUERIES]
    tok = train_bpe(NAMES + [p for p, _ in items], 200)
    return tok, sharp_tiny_model(vocab=len(tok), seed=5), items


def counting_tokens(model) -> list[int]:
    """A one-element list that counts every token the model embeds from now on."""
    count = [0]
    model.get_input_embeddings().register_forward_hook(lambda m, i, o: count.__setitem__(0, count[0] + i[0].numel()))
    return count


def relative_gap(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(g - w) / np.abs(w))) for g, w in zip(got, want))


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_shared_opening_scores_equal_whole_prompts(opening_model, attention):
    """The opening every D.1 prompt shares, run once per call: the scores of every prompt run whole
    within 1e-5 relative, one query a pass (each layout) and several (right-padded rows behind the
    expanded cache), with far fewer tokens run; and the naive reference agrees."""
    from arrank.training.encoding import prompt_ids

    tok, model, items = opening_model
    model.config._attn_implementation = attention
    try:
        prompts = [prompt_ids(tok, p) for p, _ in items]
        with scoring.eval_mode(model):
            opening = scoring.opening_cache(model, prompts)
        assert opening is not None and len(opening.ids) >= 50 and min(map(len, prompts)) >= len(opening.ids) + 5
        naive = scoring.score_queries(model, tok, items, progress=False, method="naive")
        count = counting_tokens(model)
        for layout, group in [("auto", 1), ("packed", 1), ("padded", 1), ("one_pass", 1), ("auto", 2), ("auto", 5)]:
            kw = {"progress": False, "query_batch": group, "layout": layout}
            count[0] = 0
            whole = scoring.score_queries(model, tok, items, share_opening=False, **kw)
            whole_tokens, count[0] = count[0], 0
            got = scoring.score_queries(model, tok, items, **kw)
            assert relative_gap(whole, naive) <= 1e-5 and relative_gap(got, whole) <= 1e-5, (layout, group)
            # the opening ran once, not once per query (padded rows included)
            assert count[0] == whole_tokens - (len(items) - 1) * len(opening.ids), (layout, group)
    finally:
        model.config._attn_implementation = "sdpa"


def test_shared_opening_scores_equal_whole_prompts_in_bf16(opening_model):
    """Scoring in bf16 (what ``auto`` picks on a CPU whose probe finds bf16 faster): the shared
    opening's scores are the whole prompts' within bf16's rounding, 2^-8 relative (absolute below
    a score of 1), one query a pass and several; bf16 did run (its scores are not fp32's)."""
    from arrank.training.precision import inference

    tok, model, items = opening_model
    fp32 = scoring.score_queries(model, tok, items, progress=False)
    for group in (1, 5):
        with inference(model, "bf16"):
            whole = scoring.score_queries(model, tok, items, progress=False, share_opening=False, query_batch=group)
            got = scoring.score_queries(model, tok, items, progress=False, query_batch=group)
        gap = max(float(np.max(np.abs(g - w) / np.maximum(1.0, np.abs(w)))) for g, w in zip(got, whole))
        assert gap <= 2**-8, (group, gap)
        assert max(float(np.max(np.abs(g - f))) for g, f in zip(got, fp32)) > 1e-4


def test_shared_opening_cache_serves_many_queries_unchanged(opening_model):
    """Scoring reads the opening's cache without appending to it, and a prompt that does not continue
    the opening is refused."""
    from arrank.training.encoding import docid_ids, prompt_ids

    tok, model, items = opening_model
    prompts = [prompt_ids(tok, p) for p, _ in items]
    cands = [[docid_ids(tok, d) for d in docs] for _, docs in items]
    with scoring.eval_mode(model):
        opening = scoring.opening_cache(model, prompts)
        before = [k.clone() for k, _, *_ in opening.cache]
        n = len(opening.ids)
        for prompt, cand in zip(prompts, cands):
            for layout in ("packed", "padded", "one_pass"):
                got = scoring.score_prefix_shared(model, prompt, cand, layout=layout, opening=opening)
                assert np.max(np.abs(got - scoring.score_naive(model, prompt, cand))) <= TOL
        assert opening.cache.get_seq_length() == n
        assert all(torch.equal(b, k) for b, (k, _, *_) in zip(before, opening.cache))
        with pytest.raises(ValueError, match=f"does not continue the shared opening of {n} tokens"):
            scoring.score_prefix_shared(model, [5] + prompts[0][1:], cands[0], opening=opening)
        with pytest.raises(ValueError, match="by at least one token"):
            scoring.prompt_opening(model, prompts[0][:n], opening)
        assert scoring.opening_cache(model, prompts[:1]) is None  # one prompt: nothing to share
        short = [p[:5] + [9, 9, 9] for p in prompts]  # 5 shared tokens, below MIN_SHARED
        assert scoring.opening_cache(model, short) is None


def test_shared_opening_recomputed_for_each_call(opening_model):
    """Scoring mid-training (evaluation.budgets) after a weight update: each call runs the opening with
    the weights it scores, so its scores are the new weights' whole-prompt scores."""
    import copy

    tok, base, items = opening_model
    model = copy.deepcopy(base)
    first = scoring.score_queries(model, tok, items, progress=False)
    with torch.no_grad():
        layer = model.model.layers[0].self_attn.k_proj  # moves only the keys: the cached ones included
        layer.weight.mul_(1.5)
    again = scoring.score_queries(model, tok, items, progress=False)
    whole = scoring.score_queries(model, tok, items, progress=False, share_opening=False)
    assert relative_gap(again, whole) <= 1e-5
    assert relative_gap(again, first) > 1e-3


def test_opening_support_and_fallback(opening_model, monkeypatch):
    """Where the opening cannot (or is not measured to) pay, every prompt runs whole: no config, an
    Unsloth-patched model, a forward without past_key_values, a GPU; the naive method never shares."""
    tok, model, items = opening_model
    assert scoring.opening_support(model) == (True, "the opening's key/value cache serves every query")
    assert scoring.resolve_layout(model, "auto", opening=True) == "one_pass"  # one pass behind the opening
    assert scoring.resolve_layout(model, "packed", opening=True) == "packed"

    class NoCache(torch.nn.Module):
        config = model.config

        def forward(self, input_ids):
            return model(input_ids=input_ids)

    assert scoring.opening_support(torch.nn.Linear(2, 2))[1] == "Linear has no transformers config"
    assert scoring.opening_support(NoCache()) == (False, "NoCache.forward takes no past_key_values")
    monkeypatch.setattr(scoring, "model_device", lambda m: torch.device("cuda"))
    assert "on a GPU" in scoring.opening_support(model)[1] and not scoring.opening_support(model)[0]
    monkeypatch.undo()
    unsloth = sharp_tiny_model(vocab=len(tok), seed=5)
    unsloth.config.unsloth_version = "2026.10.9"
    ok, why = scoring.opening_support(unsloth)
    assert not ok and "Unsloth" in why
    count = counting_tokens(unsloth)
    whole = scoring.score_queries(model, tok, items, progress=False, share_opening=False)
    got = scoring.score_queries(unsloth, tok, items, progress=False)  # padded layout, whole prompts
    assert relative_gap(got, whole) <= 1e-5
    from arrank.training.encoding import prompt_ids

    prompt_tokens = sum(len(prompt_ids(tok, p)) for p, _ in items)
    assert count[0] >= prompt_tokens  # every prompt ran whole
    calls = []
    monkeypatch.setattr(scoring, "opening_cache", lambda *a: calls.append(a))
    scoring.score_queries(model, tok, items[:2], progress=False, method="naive")
    scoring.score_queries(model, tok, items[:2], progress=False, share_opening=False)
    assert calls == []
