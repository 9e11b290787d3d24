# a dtype written as a string
import cutile
from cutile.core import *

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(zeros((16,), "f32"))  #~ ERROR
