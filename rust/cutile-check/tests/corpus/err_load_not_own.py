# expect: CT1007
# rule 4: the neighbour's tile is another block's
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    t = z.load(index=(block_id(0) + 1,))
    z.store(t)
