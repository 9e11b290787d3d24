# expect: CT1006
# rule 4: reading one Mut at another Mut's position
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], w: Mut[Tensor[f32, [128]]]):
    t = load_tile_like(w, z)
    z.store(t)
    w.store(t)
