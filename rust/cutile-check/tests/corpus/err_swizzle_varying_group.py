# expect: CT2001
# rule 5: a grouped swizzle whose group size depends on the block is not a bijection: the search finds two blocks on one tile
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]]):
    num_m = num_tiles(z, 0)
    num_n = num_tiles(z, 1)
    G = block_id(0) + 1
    pid = block_id(0) * num_n + block_id(1)
    in_group = G * num_n
    group_id = pid // in_group
    first_m = group_id * G
    size_m = minimum(num_m - first_m, G)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    z.store(zeros((128, 128), f32), index=(pid_m, pid_n))
