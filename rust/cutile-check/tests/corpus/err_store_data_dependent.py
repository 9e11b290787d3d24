# expect: CT2003
# rule 5: an index read from memory cannot be proved injective
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128]]], perm: Tensor[i32, [-1]]):
    j = perm.load_tile((1,), (block_id(0),)).sum()
    z.store(zeros((128,), f32), index=(j,))
