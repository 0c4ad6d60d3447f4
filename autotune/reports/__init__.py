"""What the commands print: terminal lines and tables, fed by records and reports, never by
the running search loop, so a report reads the same whoever produced its data."""

from __future__ import annotations
