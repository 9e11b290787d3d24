"""cutile: safe, data-race-free GPU tile kernels written in Python."""
