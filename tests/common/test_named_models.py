"""named_models: what kind of model a model_name names, what it refuses, and a recorded file's check."""

import base64
import hashlib

import pytest

from arrank.common import named_models


def test_each_kind_of_model_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mine").mkdir()
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    kinds = {
        "tiny": "tiny",
        "paper": "alias",
        "smollm2-135m": "gguf_name",
        "owner/name-1.0": "hub",
        str(tmp_path / "mine"): "folder",
        "~/mine": "folder",
        str(tmp_path / "m.gguf"): "gguf_file",
    }
    assert {value: named_models.model_kind(value) for value in kinds} == kinds


@pytest.mark.parametrize(
    "value, message",
    [
        (" tiny", r"model_name=' tiny' has spaces around it"),
        ("   ", r"model_name='   ' is empty: it must be one of \['tiny'"),
        (5, r"model_name=5 is not a string: it must be"),
        ("/no/such/model.gguf", r"model_name='/no/such/model.gguf': no such GGUF file$"),
        ("/tmp/kit/none.gguf", r"no such GGUF file \(the GPU kit's: python gpu/kit.py link\)$"),
        ("m/" + "é" * 200, r"is too long for a name or path \(at most 4096 characters, 255 bytes a path component\)"),
        ("_owner/name", r"model_name='_owner/name' is neither a known name"),
        ("notes.txt", r"model_name='notes.txt' is a file but not a .gguf file"),
    ],
)
def test_bad_model_names_are_refused_in_one_line(tmp_path, monkeypatch, value, message):
    monkeypatch.chdir(tmp_path)  # a short relative path: a long one is shown cut to ~80 characters
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=message):
        named_models.model_kind(value)


def test_a_recorded_file_is_held_to_its_size_and_urlsafe_sha256(tmp_path):
    (path := tmp_path / "f.bin").write_bytes(b"\xfb\xff" * 50)
    digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
    named_models.check_recorded_file(path, 100, digest)  # as a wheel's RECORD writes it: passes
    with pytest.raises(ValueError, match=r"f.bin is 100 bytes where its package recorded 101: .*; do this$"):
        named_models.check_recorded_file(path, 101, digest, "do this")
    with pytest.raises(ValueError, match=r"f.bin does not match the sha256 its package recorded"):
        named_models.check_recorded_file(path, 100, digest[:-1] + ("A" if digest[-1] != "A" else "B"))
