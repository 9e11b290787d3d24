# a chain of 34 device functions, each calling the next: calls are inlined, at most 32 deep
import cutile
from cutile.core import *

@cutile.device
def step0(x):
    return step1(x)

@cutile.device
def step1(x):
    return step2(x)

@cutile.device
def step2(x):
    return step3(x)

@cutile.device
def step3(x):
    return step4(x)

@cutile.device
def step4(x):
    return step5(x)

@cutile.device
def step5(x):
    return step6(x)

@cutile.device
def step6(x):
    return step7(x)

@cutile.device
def step7(x):
    return step8(x)

@cutile.device
def step8(x):
    return step9(x)

@cutile.device
def step9(x):
    return step10(x)

@cutile.device
def step10(x):
    return step11(x)

@cutile.device
def step11(x):
    return step12(x)

@cutile.device
def step12(x):
    return step13(x)

@cutile.device
def step13(x):
    return step14(x)

@cutile.device
def step14(x):
    return step15(x)

@cutile.device
def step15(x):
    return step16(x)

@cutile.device
def step16(x):
    return step17(x)

@cutile.device
def step17(x):
    return step18(x)

@cutile.device
def step18(x):
    return step19(x)

@cutile.device
def step19(x):
    return step20(x)

@cutile.device
def step20(x):
    return step21(x)

@cutile.device
def step21(x):
    return step22(x)

@cutile.device
def step22(x):
    return step23(x)

@cutile.device
def step23(x):
    return step24(x)

@cutile.device
def step24(x):
    return step25(x)

@cutile.device
def step25(x):
    return step26(x)

@cutile.device
def step26(x):
    return step27(x)

@cutile.device
def step27(x):
    return step28(x)

@cutile.device
def step28(x):
    return step29(x)

@cutile.device
def step29(x):
    return step30(x)

@cutile.device
def step30(x):
    return step31(x)

@cutile.device
def step31(x):
    return step32(x)

@cutile.device
def step32(x):
    return step33(x)  #~ ERROR

@cutile.device
def step33(x):
    return x

@cutile.entry
def k(z: Mut[Tensor[f32, [16]]]):
    z.store(step0(z.load()))
