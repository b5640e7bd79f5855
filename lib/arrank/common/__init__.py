"""The ground floor: pieces every stage and the runner share, importing no other part of arrank
(DEVELOPERS.md, "Where code belongs"): ``paths``, notebook ``params``, run ``outputs``, the
``display`` convention, ``findings``, ``processes`` (DDP and threads), ``wordnet_setup``,
``named_models``, file ``manifest``s and run ``notices``."""
