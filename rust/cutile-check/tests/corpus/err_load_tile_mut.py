# expect: CT1005
# rule 4: load_tile on a Mut reads a foreign tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]]):
    t = z.load_tile((128,), (0,))
    z.store(t)
