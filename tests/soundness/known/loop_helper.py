"""Known class 6 (helper file): `relay` returns its argument through a one-iteration loop.
The padding comment below puts its loop variable `j` at the byte offset of `i` in
loop_entry.py; test_known_classes.py checks that the offsets agree."""

import cutile

#------------------------------------------------------------------------------
#------------------------------------------------------------------------------
#------------------------------------------------------------------------------
#----


@cutile.device
def relay(v):
    for j in range(1):  # noqa: B007 (the loop is the point)
        v = v + 0
    return v
