//! Packing one launch's parameters into the driver's buffer (`struct` semantics, native
//! byte order), from the slots the lowering laid out.

use super::{Arg, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    Ptr,
    Shape,
    Stride,
    Scalar,
}

/// One kernel parameter as the driver sees it (`lowering.signature.Slot` with its offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotPlan {
    pub kind: SlotKind,
    /// Index into [`LaunchPlan::params`].
    pub param: usize,
    pub axis: usize,
    /// The `struct` format character.
    pub fmt: u8,
    /// Byte offset in the naturally aligned parameter buffer.
    pub offset: usize,
}

/// Bytes a `struct` format character packs (`None`: not a parameter format).
pub fn fmt_size(fmt: u8) -> Option<usize> {
    Some(match fmt {
        b'?' | b'b' | b'B' => 1,
        b'h' | b'H' | b'e' => 2,
        b'i' | b'I' | b'f' => 4,
        b'q' | b'Q' | b'd' => 8,
        _ => return None,
    })
}

/// A value `struct.pack` would refuse for `fmt` (the caller lets Python raise it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackError {
    pub fmt: u8,
    pub value: Value,
}

/// `f64` to IEEE half, rounding to nearest even (`None` when finite but too large, as
/// `struct.pack("e", x)` refuses it).
pub fn f16_bits(x: f64) -> Option<u16> {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return Some(sign | 0x7e00);
    }
    if x.is_infinite() {
        return Some(sign | 0x7c00);
    }
    let a = x.abs();
    if a == 0.0 {
        return Some(sign);
    }
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let bits = if e < -14 {
        // subnormal half: units of 2^-24 (a carry into 1024 is the smallest normal)
        (a * 2f64.powi(24)).round_ties_even() as u32
    } else {
        let q = (a * 2f64.powi(10 - e)).round_ties_even() as u32; // in [1024, 2048]
        (((e + 15) as u32) << 10) + (q - 1024)
    };
    if bits >= 0x7c00 {
        return None;
    }
    Some(sign | bits as u16)
}

fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

/// Pack one launch's parameters into `buf` (native byte order, `struct` semantics).
/// Panics if a slot lies outside `buf` (the caller sized it from the same slots).
pub fn pack(
    slots: &[SlotPlan],
    args: &[Arg<'_>],
    scalars: &[Option<Value>],
    buf: &mut [u8],
) -> Result<(), PackError> {
    for s in slots {
        let handle = match args.get(s.param) {
            Some(Arg::Handle(d)) => Some(*d),
            _ => None,
        };
        let value = match (s.kind, handle) {
            (SlotKind::Ptr, Some(d)) => {
                if s.fmt != b'Q' {
                    return Err(PackError {
                        fmt: s.fmt,
                        value: Value::Int(0),
                    });
                }
                put(buf, s.offset, &d.address.to_ne_bytes());
                continue;
            }
            (SlotKind::Shape, Some(d)) => d.layout.shape.get(s.axis).copied().map(Value::Int),
            (SlotKind::Stride, Some(d)) => d.layout.strides.get(s.axis).copied().map(Value::Int),
            (SlotKind::Scalar, None) => scalars.get(s.param).copied().flatten(),
            _ => None,
        };
        let err = PackError {
            fmt: s.fmt,
            value: value.unwrap_or(Value::Int(0)),
        };
        let Some(value) = value else {
            return Err(err);
        };
        let int = |lo: i128, hi: i128| match value {
            Value::Int(v) if (lo..=hi).contains(&i128::from(v)) => Ok(v),
            Value::Bool(b) => Ok(i64::from(b)),
            _ => Err(err),
        };
        let float = match value {
            Value::Int(v) => v as f64,
            Value::Float(f) => f,
            Value::Bool(b) => f64::from(u8::from(b)),
        };
        let o = s.offset;
        match s.fmt {
            b'q' => put(
                buf,
                o,
                &int(i64::MIN.into(), i64::MAX.into())?.to_ne_bytes(),
            ),
            b'i' => put(
                buf,
                o,
                &(int(i32::MIN.into(), i32::MAX.into())? as i32).to_ne_bytes(),
            ),
            b'h' => put(
                buf,
                o,
                &(int(i16::MIN.into(), i16::MAX.into())? as i16).to_ne_bytes(),
            ),
            b'b' => put(
                buf,
                o,
                &(int(i8::MIN.into(), i8::MAX.into())? as i8).to_ne_bytes(),
            ),
            b'I' => put(buf, o, &(int(0, u32::MAX.into())? as u32).to_ne_bytes()),
            b'H' => put(buf, o, &(int(0, u16::MAX.into())? as u16).to_ne_bytes()),
            b'B' => put(buf, o, &[int(0, u8::MAX.into())? as u8]),
            b'?' => put(buf, o, &[u8::from(float != 0.0 || float.is_nan())]),
            b'd' => put(buf, o, &float.to_ne_bytes()),
            b'f' => {
                let y = float as f32;
                if y.is_infinite() && float.is_finite() {
                    return Err(err);
                }
                put(buf, o, &y.to_ne_bytes());
            }
            b'e' => put(buf, o, &f16_bits(float).ok_or(err)?.to_ne_bytes()),
            _ => return Err(err),
        }
    }
    Ok(())
}

/// A launch's parameter buffer and the pointer array `cuLaunchKernel` takes, on the stack
/// for kernels of up to [`ParamBuffer::INLINE`] words and slots (the launch path allocates
/// nothing then).
pub struct ParamBuffer {
    small: [u64; ParamBuffer::INLINE],
    big: Vec<u64>,
    words: usize,
}

impl ParamBuffer {
    /// Words (and slots) kept on the stack: a kernel of five 3-D tensors and a few scalars.
    pub const INLINE: usize = 40;

    /// A zeroed buffer of `size` bytes.
    pub fn new(size: usize) -> Self {
        let words = size.div_ceil(8).max(1);
        ParamBuffer {
            small: [0; Self::INLINE],
            big: if words > Self::INLINE {
                vec![0; words]
            } else {
                Vec::new()
            },
            words,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        if self.words > Self::INLINE {
            &mut self.big
        } else {
            &mut self.small[..self.words]
        }
    }

    /// The buffer as bytes (a `u64` buffer keeps every slot naturally aligned).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let words = self.words_mut();
        let n = words.len() * 8;
        // SAFETY: a u64 slice viewed as its bytes (u8 has alignment 1), borrowed
        // exclusively for the lifetime of the returned slice.
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), n) }
    }

    /// Pack the launch (`pack`) into the buffer.
    pub fn pack(
        &mut self,
        slots: &[SlotPlan],
        args: &[Arg<'_>],
        scalars: &[Option<Value>],
    ) -> Result<(), PackError> {
        pack(slots, args, scalars, self.bytes_mut())
    }

    /// Call `f` with one pointer per slot into the buffer (null when there are no slots):
    /// the `kernelParams` of `cuLaunchKernel`, valid during the call.
    pub fn with_params<R>(
        &mut self,
        slots: &[SlotPlan],
        f: impl FnOnce(*mut *mut std::ffi::c_void) -> R,
    ) -> R {
        let bytes = self.bytes_mut();
        let len = bytes.len();
        let base = bytes.as_mut_ptr();
        let mut small = [std::ptr::null_mut::<std::ffi::c_void>(); Self::INLINE];
        let mut big = Vec::new();
        let ptrs: &mut [*mut std::ffi::c_void] = if slots.len() <= small.len() {
            &mut small[..slots.len()]
        } else {
            big.resize(slots.len(), std::ptr::null_mut());
            &mut big
        };
        for (p, s) in ptrs.iter_mut().zip(slots) {
            let at = s.offset.min(len);
            // SAFETY: `at` is within the buffer (every slot's offset + size is, as checked
            // when the kernel was registered; clamped here all the same).
            *p = unsafe { base.add(at) }.cast::<std::ffi::c_void>();
        }
        if ptrs.is_empty() {
            f(std::ptr::null_mut())
        } else {
            f(ptrs.as_mut_ptr())
        }
    }
}
