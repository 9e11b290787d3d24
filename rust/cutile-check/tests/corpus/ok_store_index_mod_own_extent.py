# expect: ok
# `b % z.shape[0]` is `b`: the launch rule makes grid(0) == cdiv(z.shape[0], B) <= z.shape[0]
# (found by the soundness fuzzer: the checker used to reject it with a counterexample that
# no launch can produce)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[i32, ["B"]]], B: Const[int]):
    i = block_id(0) % z.shape[0]
    z.store(full((B,), 1, i32), index=(i,))
