"""The package's version, in a module of its own: the runtime path and the records read it
without importing the package's root (which offers ``autotune.tune``, the search's entry)."""

VERSION = "0.1.0"
