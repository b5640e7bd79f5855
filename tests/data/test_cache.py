"""cache: a folder per parameter set, read back whole (list cells as lists), or set aside when it is not."""

import pandas as pd

from arrank.data import cache


def test_the_folder_name_follows_every_value_not_the_key_order():
    a = cache.params_hash({"subtree": "canine.n.02", "n_eval": 20})
    assert len(a) == 12 and a == cache.params_hash({"n_eval": 20, "subtree": "canine.n.02"})
    assert a != cache.params_hash({"subtree": "canine.n.02", "n_eval": 21})


def test_tables_come_back_with_list_cells_and_a_first_copy_is_kept(tmp_path):
    target = tmp_path / "h"
    cache.save_tables(target, {"q": pd.DataFrame({"query": ["a"], "gold": [["x", "y"]]})}, {"n": 1})
    cache.save_tables(target, {"other": pd.DataFrame({"query": ["b"]})}, {"n": 2})  # a second process, later
    tables = cache.cached_tables(target, list_columns=["gold"], names=["q"])
    assert list(tables) == ["q"] and tables["q"]["gold"].tolist() == [["x", "y"]]
    assert type(tables["q"]["gold"].iloc[0]) is list


def test_a_folder_without_a_named_table_or_a_file_in_its_place_is_set_aside(tmp_path, capsys):
    target = tmp_path / "h"
    cache.save_tables(target, {"q": pd.DataFrame({"query": ["a"]})}, {})
    assert cache.cached_tables(target, names=["q", "docs"]) is None
    (path := tmp_path / "f").write_text("x")
    assert cache.cached_tables(path) is None
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith(f"{target} is unusable: its table(s) ['docs'] are missing; it is derived data")
    assert said[1].startswith(f"{path} is unusable: it is a file, not a cache folder; ")
    assert sorted(p.name[:8] for p in tmp_path.iterdir()) == ["broken-f", "broken-h"]
