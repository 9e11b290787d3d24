"""Interop tests (DLPack, array interfaces) and their stand-in producers."""
