"""manifest: a manifest.json that is valid JSON of the wrong shape is named unreadable, in one line."""

import pytest

from arrank.common import manifest


@pytest.mark.parametrize(
    "text, error",
    [
        ('{"no": 1}', "KeyError"),
        ("[1]", "TypeError"),
        ('{"files": [1]', "JSONDecodeError"),
        ('{"files": [1]}', "AttributeError"),  # hand-edited entries: no mapping, no dict, no sha256
        ('{"files": {"a.csv": 1}}', "TypeError"),
        ('{"files": {"a.csv": {"size": 4}}}', "KeyError"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_named_unreadable(tmp_path, text, error):
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / manifest.MANIFEST).write_text(text)
    assert manifest.manifest_problem(tmp_path) == f"its manifest.json is unreadable ({error})"
