# expect: ok
# Triton-style grouped swizzle with a Const group size
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [128, 128]]], GROUP_M: Const[int]):
    num_m = num_tiles(z, 0)
    num_n = num_tiles(z, 1)
    pid = block_id(0) * num_n + block_id(1)
    in_group = GROUP_M * num_n
    group_id = pid // in_group
    first_m = group_id * GROUP_M
    size_m = minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    z.store(zeros((128, 128), f32), index=(pid_m, pid_n))
