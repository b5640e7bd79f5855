"""The ground floor: pieces every stage and the runner share, importing no other part of arrank
(docs/design.md, "Layout")."""
