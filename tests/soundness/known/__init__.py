"""Kernels in several files for the known-class regressions (test_known_classes.py)."""
