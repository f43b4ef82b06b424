"""The upgrade step kinds' spec halves and the gate's probe kinds, one module each, with their registries (pure)."""
