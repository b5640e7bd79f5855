"""Training (notebook 05): section 4 of arXiv 2601.05588, STOICaL fine-tuning of a causal LM.

``models`` loads the model and tokenizer (the tiny random-initialised model whose BPE comes from
``tokenizer``, or a pretrained LLM with LoRA; Unsloth or transformers + peft), ``encoding`` turns
a prompt and a docID into token ids, ``trie`` builds the prefix-trie targets of section 4.2 and
Appendix F, ``schemes`` registers the item weights λ(r) of section 4.1, ``stoical`` is the loss of
Eq. 3, ``packing`` puts all ranks of a query behind one prompt, ``shared_prefix`` runs a batch's
common prompt opening once, ``supervised_head`` runs the LM head at the supervised positions only,
``precision`` chooses fp32 or bf16, ``sampling`` draws weighted items by (seed, epoch) only,
``train`` builds the items and runs training (Appendix B) through the Trainer subclass of
``trainer``, whose checkpoints ``checkpoints`` seals and checks.
"""
