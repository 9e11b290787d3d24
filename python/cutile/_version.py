"""The package version, in a module of its own so that the cache key can read it without
importing the whole package (it is also `cutile.__version__`)."""

__version__ = "0.1.0"
