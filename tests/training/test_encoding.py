"""arrank.training.encoding: a (prompt, docID) item as token ids (section 5.1's augmented query, then
the docID and EOS), on a word-level tokenizer whose ids are known by hand."""

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from arrank.training.encoding import docid_ids, docid_table, prompt_ids

VOCAB = {"<bos>": 0, "<eos>": 1, "<unk>": 2, "a": 3, "b": 4, "c": 5, "user:": 6, "assistant:": 7}


def word_tokenizer(bos: bool = True, eos: bool = True) -> PreTrainedTokenizerFast:
    """Words split on whitespace, ids from VOCAB; like Llama's, its own encoding opens with BOS."""
    core = Tokenizer(models.WordLevel(VOCAB, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if bos:
        core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 0)])
    special = {"bos_token": "<bos>"} if bos else {}
    special |= {"eos_token": "<eos>"} if eos else {}
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", **special)


def test_a_prompt_opens_with_one_bos_or_is_the_chat_templates_user_turn_and_generation_prompt():
    tok = word_tokenizer()
    assert prompt_ids(tok, "a b") == [0, 3, 4]  # BOS once, though the tokenizer's own encoding adds one
    assert prompt_ids(word_tokenizer(bos=False), "a b") == [3, 4]
    tok.chat_template = "{% for m in messages %}user: {{ m['content'] }} {% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"
    assert prompt_ids(tok, "c a") == [6, 5, 3, 7]  # the docID's first token is predicted after "assistant:"


def test_a_docid_ends_with_eos_and_two_docids_of_one_encoding_are_refused():
    tok = word_tokenizer()
    assert docid_ids(tok, "b c") == [4, 5, 1]
    assert docid_table(tok, ["a", "b c", "a"]) == {"a": (3, 1), "b c": (4, 5, 1)}
    with pytest.raises(ValueError, match=r"docIDs 'b c' and 'b  c' encode to the same tokens \(4, 5, 1\)"):
        docid_table(tok, ["b c", "b  c"])
    with pytest.raises(ValueError, match="the tokenizer has no EOS token"):
        docid_ids(word_tokenizer(eos=False), "a")
