"""Status: kstatus conditions (Ready / Reconciling / Stalled) and Events."""
