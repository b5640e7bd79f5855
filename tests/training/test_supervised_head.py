"""The LM head at the supervised positions only (arrank.training.supervised_head): the same loss
and gradients as STOICaL on full logits, for unpacked items, packed rows (4-D mask), a LoRA model
and the NTP variant, and the head's float32 rule under bf16 autocast."""

from __future__ import annotations

import pytest
import torch
from tiny_setup import THREE_QUERIES as QUERIES
from tiny_setup import ranked_queries_model

from arrank.training import models, packing, precision, stoical, train
from arrank.training.supervised_head import head_at, output_head

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    return ranked_queries_model(QUERIES, "wordnet_short")


def _loss_and_grads(model, batch, rows_only: bool, used: str = "fp32"):
    """(loss, flat gradient of the trainable parameters) the old way (full logits) or the new."""
    kw = (
        {"position_ids": batch["position_ids"], "attention_mask": packing.model_mask(model, batch["allowed"])}
        if "allowed" in batch
        else {"attention_mask": batch["attention_mask"]}
    )
    targets = (batch["target_ids"], batch["target_mass"], batch["item_weight"])
    params = [p for p in model.parameters() if p.requires_grad]
    with precision.autocast(used):
        if rows_only:
            with head_at(model, stoical.supervised_positions(batch["target_mass"])) as call:
                logits = model(input_ids=batch["input_ids"], **kw).logits
            assert call.used and logits.shape == (call.rows, model.config.vocab_size)
            loss = stoical.stoical_loss_at(logits, *targets)
        else:
            loss = stoical.stoical_loss(model(input_ids=batch["input_ids"], **kw).logits, *targets)
    grads = torch.autograd.grad(loss, params)
    return loss.detach(), torch.cat([g.flatten() for g in grads])


def _close(a: torch.Tensor, b: torch.Tensor, rel: float) -> float:
    """|a - b| relative to the scale of b (norm), asserted below ``rel``; returns it."""
    d = float((a - b).norm() / b.norm())
    assert d <= rel, d
    return d


def _batches(df, tok, model, scheme="fractional"):
    items = train.training_items(df, tok, scheme, alpha=2.0, targets="trie", beta=2.0)
    yield "unpacked", train.collate(items, tok.pad_token_id)
    if scheme != "indicator":
        seqs = packing.pack_items(items, 1024)
        yield "packed", packing.collate_packed(seqs, tok.pad_token_id, row_length=packing.row_length_for(seqs, 1024))


@pytest.mark.parametrize("scheme", ["fractional", "indicator"])
def test_head_at_supervised_positions_gives_the_full_logits_loss_and_gradients(data, scheme):
    df, model, tok = data
    for layout, batch in _batches(df, tok, model, scheme):
        n_sup = stoical.supervised_count(batch["target_mass"])
        assert n_sup < batch["input_ids"].numel() / 2, layout  # the head runs on far fewer rows
        loss_all, g_all = _loss_and_grads(model, batch, rows_only=False)
        loss_rows, g_rows = _loss_and_grads(model, batch, rows_only=True)
        assert abs(loss_rows - loss_all) <= 1e-6 * abs(loss_all), layout
        _close(g_rows, g_all, 1e-5)
        assert g_all.abs().max() > 1e-2  # a gradient that is there to compare


def test_head_at_works_through_a_lora_model(data):
    df, base, tok = data
    import copy

    model = models.add_lora(copy.deepcopy(base), "transformers", 4, 8, 0.0, "all-linear", seed=0)
    with torch.no_grad():  # LoRA B starts at zero: move it so the adapters carry gradient both ways
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(1)) * 0.1)
    assert type(output_head(model)) is torch.nn.Linear  # all-linear LoRA leaves the head alone
    batch = next(b for layout, b in _batches(df, tok, model) if layout == "packed")
    loss_all, g_all = _loss_and_grads(model, batch, rows_only=False)
    loss_rows, g_rows = _loss_and_grads(model, batch, rows_only=True)
    assert g_all.numel() < sum(p.numel() for p in base.parameters())  # only the adapters train
    assert abs(loss_rows - loss_all) <= 1e-6 * abs(loss_all)
    _close(g_rows, g_all, 1e-5)


def test_head_is_restored_and_float32_under_bf16_autocast(data):
    df, model, tok = data
    head = output_head(model)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad(), precision.autocast("bf16"):
        plain = model(input_ids=ids).logits
        with head_at(model) as call:
            kept = model(input_ids=ids).logits
    assert plain.dtype == torch.bfloat16 and kept.dtype == torch.float32 and call.used
    assert "forward" not in head.__dict__  # the override is gone after the block
    # computed in float32, not bf16 logits cast up: most values are not representable in bf16
    assert (kept.to(torch.bfloat16).float() != kept).float().mean() > 0.9
    with torch.no_grad():
        want = model(input_ids=ids).logits  # float32 model, no autocast
    assert (kept - want).abs().max() <= 0.05 * want.abs().max()  # bf16 hidden states: close
    with pytest.raises(ValueError, match="two 1-D index tensors"):
        with head_at(model, (torch.tensor([0]),)):
            pass


def test_bf16_loss_and_gradients_agree_with_fp32_relative_to_their_scale(data):
    """Mixed precision (matmuls in bf16, head, log-softmax and sum in float32) on the same packed
    batch: the loss within 1% of the fp32 loss, the gradient within 5% (relative norm; bf16 keeps
    8 significant bits, about 0.4% per rounding, accumulated over the layers)."""
    df, model, tok = data
    batch = next(b for layout, b in _batches(df, tok, model) if layout == "packed")
    loss32, g32 = _loss_and_grads(model, batch, rows_only=True)
    loss16, g16 = _loss_and_grads(model, batch, rows_only=True, used="bf16")
    assert abs(loss16 - loss32) <= 1e-2 * abs(loss32)
    d = _close(g16, g32, 5e-2)
    assert d > 0  # bf16 really ran (the same numbers would mean autocast did nothing)


def test_float32_head_computes_in_float32_with_the_bias():
    """A bf16 hidden state through a head with a bias, under bf16 autocast: float32 logits equal to
    the float32 product of the same (bf16-valued) inputs, bias included."""
    from arrank.training.supervised_head import float32_head

    torch.manual_seed(0)
    head = torch.nn.Linear(8, 5, bias=True)
    hidden = torch.randn(3, 8).to(torch.bfloat16)
    with precision.autocast("bf16"):
        got = float32_head(head, hidden)
    want = hidden.float() @ head.weight.detach().T + head.bias.detach()
    assert got.dtype == torch.float32 and torch.allclose(got, want, atol=1e-6)


def test_float32_head_gives_float32_from_a_head_of_another_class_or_a_given_forward():
    """A head that is not a plain ``nn.Linear`` (a LoRA-wrapped one) whose forward answers in bf16: float32 logits."""
    from arrank.training.supervised_head import float32_head

    class Half(torch.nn.Module):
        def forward(self, x):
            return (2 * x).to(torch.bfloat16)

    hidden = torch.ones(2, 3, dtype=torch.bfloat16)
    got = [float32_head(Half(), hidden), float32_head(Half(), hidden, forward=lambda x: x.to(torch.bfloat16))]
    assert [g.dtype for g in got] == [torch.float32] * 2  # its class's forward (2x), then the one given (x)
    assert [g.tolist() for g in got] == [[[2.0] * 3] * 2, [[1.0] * 3] * 2]


def test_head_at_on_a_head_of_another_class_with_a_hook_and_its_refusals(data):
    """A head that is not a plain ``nn.Linear`` runs its class's forward, through a forward an
    accelerate-style hook put on the instance (restored after the block); bad ``rows``, hidden states
    that are not (batch, positions, hidden) and a model without a head are refused, naming them."""
    import copy

    _, base, _ = data
    model = copy.deepcopy(base)
    plain = output_head(model)
    model.lm_head = type("Head", (torch.nn.Linear,), {})(plain.in_features, plain.out_features, bias=False)
    model.lm_head.weight = plain.weight
    ids, rows = torch.tensor([[5, 6, 7, 8]]), (torch.tensor([0, 0]), torch.tensor([1, 3]))
    with torch.no_grad():
        want = base(input_ids=ids).logits[0, [1, 3]]
        with head_at(model, rows):  # no hook: the class's forward, not the override again
            assert torch.allclose(model(input_ids=ids).logits, want, atol=1e-6)
        calls = []

        def hook(hidden, _head=model.lm_head):
            calls.append(tuple(hidden.shape))
            return type(_head).forward(_head, hidden)

        model.lm_head.forward = hook
        with head_at(model, rows):
            assert torch.allclose(model(input_ids=ids).logits, want, atol=1e-6)
            with pytest.raises(ValueError, match=r"shape \(2, 32\), expected \(batch, positions, hidden\)"):
                model.lm_head(torch.zeros(2, 32))
    assert calls == [(2, 32)] and model.lm_head.__dict__["forward"] is hook  # the hook ran, and is back
    for bad in [(torch.tensor([0, 0]), torch.tensor([1])), (torch.tensor([[0]]), torch.tensor([[1]]))]:
        with pytest.raises(ValueError, match=r"two 1-D index tensors of equal length \(row, position\), got \["):
            with head_at(model, bad):
                pass
    encoder = type("Encoder", (torch.nn.Module,), {"get_output_embeddings": lambda self: None})()
    with pytest.raises(ValueError, match=r"^Encoder has no output embedding \(lm_head\) to apply$"):
        output_head(encoder)
