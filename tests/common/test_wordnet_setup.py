"""WordNet set-up from Debian's files, and a clear error when WordNet cannot be had."""

import pytest

from arrank.common import wordnet_setup as ws

MANPAGE_SNIPPET = "".join(
    f"{i:02d}\t{name}\tsome description\n"
    for i, name in enumerate(
        ["adj.all", "adj.pert", "adv.all", "noun.Tops"]
        + [f"noun.x{i}" for i in range(26)]
        + [f"verb.y{i}" for i in range(15)]
    )
)


def test_lexnames_from_manpage_text():
    lines = ws.lexnames_from_manpage("header\n" + MANPAGE_SNIPPET + "trailer 99\tnoun.zz\n")
    assert len(lines) == 45
    assert lines[:4] == ["00\tadj.all\t3", "01\tadj.pert\t3", "02\tadv.all\t4", "03\tnoun.Tops\t1"]
    assert lines[-1] == "44\tverb.y14\t2"
    with pytest.raises(ValueError, match="expected lexicographer files 00..44"):
        ws.lexnames_from_manpage(MANPAGE_SNIPPET.replace("07\t", "70\t"))


@pytest.mark.skipif(not ws.DEBIAN_LEXNAMES_MAN.exists(), reason="Debian's wordnet-base is not installed")
def test_install_from_debian_is_readable_by_nltk(tmp_path, monkeypatch):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])  # NLTK reads only known roots

    dest = ws.install_from_debian(dest_root=tmp_path)
    assert (dest / "lexnames").read_text().splitlines()[5] == "05\tnoun.animal\t1"
    reader = WordNetCorpusReader(str(dest), None)
    assert reader.get_version() == "3.0"
    assert reader.synset("deer.n.01").hypernyms()[0].name() == "ruminant.n.01"
    assert reader.synset("dog.n.01").lexname() == "noun.animal"
    assert [p.name for p in (tmp_path / "corpora").iterdir()] == ["wordnet"]  # no temporary folder left


def test_install_from_incomplete_source_leaves_nothing(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "data.noun").write_text("x")
    with pytest.raises(ws.WordNetMissingError, match=r"lacks \['index.noun', 'index.sense'\]"):
        ws.install_from_debian(source=src, dest_root=tmp_path / "nltk")
    for name in ("index.noun", "index.sense"):
        (src / name).write_text("x")
    monkeypatch.setattr(ws, "DEBIAN_LEXNAMES_MAN", tmp_path / "lexnames.5.gz")  # the manual page is missing
    with pytest.raises(ws.WordNetMissingError, match=r"the lexnames manual page .*lexnames.5.gz is missing"):
        ws.install_from_debian(source=src, dest_root=tmp_path / "nltk")
    assert not (tmp_path / "nltk").exists()


def test_missing_wordnet_without_apt_says_how(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(ws, "wordnet_version", lambda: None)
    monkeypatch.setattr(ws, "DEBIAN_WORDNET", tmp_path / "none")
    monkeypatch.setattr(ws.os, "geteuid", lambda: 1000)  # not root: apt-get cannot be used
    with pytest.raises(ws.WordNetMissingError, match="apt-get install wordnet-base wordnet-sense-index"):
        ws.ensure_wordnet(verbose=False)
    assert ws.main(["--no-apt"]) == 1
    assert "nltk.download('wordnet')" in capsys.readouterr().err


def test_workbook_wordnet_is_available():
    assert ws.wordnet_version() == "3.0"


def test_help_and_a_mistyped_flag_set_up_nothing(monkeypatch, capsys):
    """``--help`` prints the usage and a flag that is not ``--no-apt`` is refused, both before any
    set-up runs (a typo of ``--no-apt`` must not allow apt)."""
    monkeypatch.setattr(ws, "ensure_wordnet", lambda **kw: pytest.fail("set-up ran"))
    for argv, code in ((["--help"], 0), (["--noapt"], 2)):
        with pytest.raises(SystemExit) as stop:
            ws.main(argv)
        assert stop.value.code == code
    out = capsys.readouterr()
    assert "[--no-apt]" in out.out and "unrecognized arguments: --noapt" in out.err


def test_apt_install_runs_update_then_install_as_root_only(monkeypatch):
    calls = []
    monkeypatch.setattr(ws.subprocess, "run", lambda cmd, **kw: calls.append((cmd, kw["env"]["DEBIAN_FRONTEND"])))
    monkeypatch.setattr(ws.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(ws.os, "geteuid", lambda: 1000)
    with pytest.raises(
        ws.AptUnavailableError, match=r"^cannot apt-get install \['wordnet-base', 'wordnet-sense-index'\]"
    ):
        ws.apt_install()
    monkeypatch.setattr(ws.os, "geteuid", lambda: 0)
    ws.apt_install()
    assert calls == [
        (["apt-get", "update", "-q"], "noninteractive"),
        (["apt-get", "install", "-y", "-q", "--no-install-recommends", "wordnet-base", "wordnet-sense-index"], "noninteractive"),
    ]  # fmt: skip


def test_ensure_wordnet_installs_only_what_is_missing_and_apt_only_when_allowed(monkeypatch, tmp_path, capsys):
    """Readable already: nothing installed. Debian's files there: copied, then read. Neither, with
    --no-apt: no apt-get, the how-to. A failing apt-get: the how-to after its error."""
    did = []
    version = {"now": "3.0"}
    monkeypatch.setattr(ws, "wordnet_version", lambda: version["now"])
    monkeypatch.setattr(ws, "apt_install", lambda: did.append("apt"))
    monkeypatch.setattr(ws, "install_from_debian", lambda: did.append("copy") or version.update(now="3.0") or "dest")
    monkeypatch.setattr(ws, "DEBIAN_WORDNET", tmp_path)
    (tmp_path / "data.noun").touch()
    assert ws.ensure_wordnet(verbose=False) == "3.0" and did == []
    version["now"] = None
    assert ws.ensure_wordnet(verbose=False) == "3.0" and did == ["copy"]
    (tmp_path / "data.noun").unlink()
    version["now"] = None
    with pytest.raises(ws.WordNetMissingError, match="^WordNet 3.0 is not available to NLTK"):
        ws.ensure_wordnet(allow_apt=False, verbose=False)
    assert ws.main(["--no-apt"]) == 1 and did == ["copy"]
    assert capsys.readouterr().err.startswith("WordNet 3.0 is not available to NLTK")

    def apt_fails():
        raise ws.subprocess.CalledProcessError(100, ["apt-get", "update"])

    monkeypatch.setattr(ws, "apt_install", apt_fails)
    with pytest.raises(ws.WordNetMissingError, match=r"returned non-zero exit status 100\.\nWordNet 3.0 is not"):
        ws.ensure_wordnet(verbose=False)
    with pytest.raises(ws.WordNetMissingError, match=r"\(or run `make test`/`make workbook`, which do this\.\)$"):
        ws.load_wordnet()


def test_nltk_reads_data_nltk_data_first_and_a_wordnet_folder_only_when_complete(monkeypatch, tmp_path):
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "elsewhere")])
    monkeypatch.setattr(ws, "NLTK_DATA", tmp_path / "nltk_data")
    folder = tmp_path / "nltk_data/corpora/wordnet"
    folder.mkdir(parents=True)
    (folder / "data.noun").write_text(
        "  1 This software and database is being provided ... WordNet 2.1 Copyright 2005\n"
    )
    assert ws.wordnet_root() is None and nltk.data.path[0] == str(tmp_path / "nltk_data")
    for name in ws.REQUIRED_FILES[1:]:
        (folder / name).touch()
    assert ws.wordnet_root() == folder and ws.wordnet_version() == "2.1"
    (folder / "data.noun").write_text("no header\n")
    assert ws.wordnet_version() is None


def test_lexnames_out_of_file_number_order_are_refused():
    rows = MANPAGE_SNIPPET.splitlines(keepends=True)
    with pytest.raises(
        ValueError, match=r"^expected lexicographer files 00..44 in lexnames\(5WN\), found 45: \[1, 0, "
    ):
        ws.lexnames_from_manpage("".join([rows[1], rows[0], *rows[2:]]))


def test_a_failed_copy_leaves_the_previous_wordnet_as_it_was(tmp_path, monkeypatch):
    import gzip

    src = tmp_path / "src"
    src.mkdir()
    for name in ("data.noun", "index.noun", "index.sense"):
        (src / name).write_text(name)
    man = tmp_path / "lexnames.5WN.gz"
    man.write_bytes(gzip.compress(MANPAGE_SNIPPET.replace("07\t", "70\t").encode()))  # a row misnumbered
    monkeypatch.setattr(ws, "DEBIAN_LEXNAMES_MAN", man)
    old = tmp_path / "nltk/corpora/wordnet"
    old.mkdir(parents=True)
    (old / "data.noun").write_text("old")
    with pytest.raises(ValueError, match="expected lexicographer files 00..44"):
        ws.install_from_debian(source=src, dest_root=tmp_path / "nltk")
    assert [p.name for p in old.iterdir()] == ["data.noun"] and (old / "data.noun").read_text() == "old"
    assert [p.name for p in old.parent.iterdir()] == ["wordnet"]
    man.write_bytes(gzip.compress(MANPAGE_SNIPPET.encode()))
    assert ws.install_from_debian(source=src, dest_root=tmp_path / "nltk") == old
    assert sorted(p.name for p in old.iterdir()) == ["data.noun", "index.noun", "index.sense", "lexnames"]
    assert (old / "data.noun").read_text() == "data.noun"
