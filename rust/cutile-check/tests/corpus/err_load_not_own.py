# expect: CT1007
# rule 4: the neighbour's tile is another block's (in bounds, and still a race: the
# neighbour stores it)
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    t = z.load(index=((block_id(0) + 1) % num_blocks(0),))
    z.store(t)
