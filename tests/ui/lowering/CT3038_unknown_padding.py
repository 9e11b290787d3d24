# a padding name that does not exist
# consts: B=16
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, ["B"]]], x: Tensor[f32, [-1]], B: Const[int]):
    z.store(load_tile_like(x, z, padding="inf"))  #~ ERROR
