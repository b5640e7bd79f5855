"""The top floor: what runs notebooks and sweeps (imported by nothing below it; DEVELOPERS.md)."""
