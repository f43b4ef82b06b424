"""Plan: a pure function from (desired, observed) to an ordered list of actions."""
