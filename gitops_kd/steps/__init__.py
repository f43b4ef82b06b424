"""The upgrade steps' kinds, one module each (pure): a gate's probes (exec, httpGet, ...) and their registry."""
