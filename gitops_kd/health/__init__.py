"""Health: one pure function per kind that turns a live object into a status and message."""
