"""One process of a several-process training check: ``torchrun --nproc_per_node N ddp_worker.py FOLDER``
(or run in-process by the test as the 1-process reference).

FOLDER holds ``model/`` (a tiny model and tokenizer, ``save_pretrained``), ``items.pt`` (training
items, ``arrank.training.train.training_items``) and ``configs.json`` (a list of
{"name", "hyper", "sampling", "packing", "stop_at", "resume_of"}). For each config every process
trains a fresh copy of the model with ``arrank.training.train.train``, records which items each of
its collated batches held, and writes ``<name>.rank<R>.json`` (the batches); rank 0 also writes
``<name>.pt`` (the training log and the final parameters). ``stop_at`` kills training after that
step (KeyboardInterrupt, as Ctrl-C) with its checkpoints kept; ``resume_of`` trains on from the
checkpoints of that config, as a resumed run of notebook 05 does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch


def _recording(batches: list) -> None:
    """Wrap the collators of ``arrank.training.train`` so each batch's items are recorded
    (query and rank of each item, or of each packed block), in the order the loader gives them."""
    from arrank.training import train

    plain, packed = train.collate, train.collate_packed
    train.collate = lambda b, *a, **k: (batches.append([[i["query"], i["rank"]] for i in b]), plain(b, *a, **k))[1]
    train.collate_packed = lambda b, *a, **k: (
        batches.append([[s["query"], s["ranks"]] for s in b]),
        packed(b, *a, **k),
    )[1]


class _StopAt:
    def __new__(cls, n: int):
        from transformers import TrainerCallback

        class Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                if state.global_step == n:
                    raise KeyboardInterrupt(f"simulated kill after step {n}")

        return Stop()


def run_config(folder: Path, cfg: dict[str, Any], rank: int) -> dict[str, Any]:
    """Train one config in this process; returns {"log", "state", "batches"}."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arrank.training import train

    model = AutoModelForCausalLM.from_pretrained(folder / "model")
    tok = AutoTokenizer.from_pretrained(folder / "model")
    items = torch.load(folder / "items.pt", weights_only=False)
    checkpoints = folder / f"ckpt-{cfg.get('resume_of') or cfg['name']}-{os.environ.get('WORLD_SIZE', '1')}"
    batches: list = []
    saved = train.collate, train.collate_packed
    _recording(batches)
    try:
        callbacks = [_StopAt(cfg["stop_at"])] if cfg.get("stop_at") else None
        try:
            log = train.train(
                model,
                tok,
                items,
                cfg["hyper"],
                checkpoints,
                seed=0,
                sampling=cfg["sampling"],
                callbacks=callbacks,
                packing=cfg["packing"],
            )
        except KeyboardInterrupt:
            log = None
    finally:
        train.collate, train.collate_packed = saved
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return {"log": None if log is None else log.to_dict("list"), "state": state, "batches": batches, "rank": rank}


def main(folder: Path) -> None:
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    for cfg in json.loads((folder / "configs.json").read_text()):
        out = run_config(folder, cfg, rank)
        size = os.environ.get("WORLD_SIZE", "1")
        (folder / f"{cfg['name']}.w{size}.rank{rank}.json").write_text(json.dumps(out["batches"]))
        if rank == 0:
            torch.save({"log": out["log"], "state": out["state"]}, folder / f"{cfg['name']}.w{size}.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
