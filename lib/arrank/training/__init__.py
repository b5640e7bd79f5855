"""Training (notebook 05): section 4 of arXiv 2601.05588, STOICaL fine-tuning of a causal LM.

``models`` loads the model and tokenizer (the tiny random-initialised model whose BPE comes from
``tokenizer``, or a pretrained LLM with LoRA; Unsloth or transformers + peft), ``encoding`` turns
a prompt and a docID into token ids, ``trie`` builds the prefix-trie targets of section 4.2 and
Appendix F, ``stoical`` is the loss of Eq. 3 with the item weights of section 4.1, ``packing``
puts all ranks of a query behind one prompt, and ``train`` is the Trainer (Appendix B).
"""
