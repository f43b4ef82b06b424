"""The KDRollout's status as types (pure): read by the planner, written by the executor, shown by UI and CLI."""
