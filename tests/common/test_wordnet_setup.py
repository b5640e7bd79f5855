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
