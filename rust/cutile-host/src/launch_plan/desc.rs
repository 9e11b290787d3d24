//! Tensor and partition descriptors as a launch sees them: element types, the byte range a
//! view touches (the ledger's), and the specialization facts (alignment, divisibility) a
//! compiled kernel may assume.

use std::sync::Arc;

/// The largest value of a signed 32-bit index (the i32 index type's limit).
pub const INT32_LIMIT: i128 = (1 << 31) - 1;

/// Divisibility facts are capped at this power of two (as `lowering.signature.MAX_DIV`).
pub const MAX_DIV: i64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemClass {
    Bool,
    Int,
    /// An unsigned integer (`u8`..`u64`: a signless Tile IR integer read as unsigned).
    UInt,
    Float,
}

/// An element type, as `cutile.dtypes` defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DType {
    pub name: &'static str,
    pub bits: u32,
    pub class: ElemClass,
}

/// Every element type; a dtype's code is its index here.
pub const DTYPES: [DType; 16] = [
    DType {
        name: "i1",
        bits: 1,
        class: ElemClass::Bool,
    },
    DType {
        name: "i8",
        bits: 8,
        class: ElemClass::Int,
    },
    DType {
        name: "i16",
        bits: 16,
        class: ElemClass::Int,
    },
    DType {
        name: "i32",
        bits: 32,
        class: ElemClass::Int,
    },
    DType {
        name: "i64",
        bits: 64,
        class: ElemClass::Int,
    },
    DType {
        name: "f16",
        bits: 16,
        class: ElemClass::Float,
    },
    DType {
        name: "bf16",
        bits: 16,
        class: ElemClass::Float,
    },
    DType {
        name: "f32",
        bits: 32,
        class: ElemClass::Float,
    },
    DType {
        name: "f64",
        bits: 64,
        class: ElemClass::Float,
    },
    DType {
        name: "tf32",
        bits: 32,
        class: ElemClass::Float,
    },
    DType {
        name: "u8",
        bits: 8,
        class: ElemClass::UInt,
    },
    DType {
        name: "u16",
        bits: 16,
        class: ElemClass::UInt,
    },
    DType {
        name: "u32",
        bits: 32,
        class: ElemClass::UInt,
    },
    DType {
        name: "u64",
        bits: 64,
        class: ElemClass::UInt,
    },
    DType {
        name: "f8e4m3fn",
        bits: 8,
        class: ElemClass::Float,
    },
    DType {
        name: "f8e5m2",
        bits: 8,
        class: ElemClass::Float,
    },
];

/// The code of a canonical dtype name (`"f32"`), or `None`.
pub fn dtype_code(name: &str) -> Option<u8> {
    DTYPES.iter().position(|d| d.name == name).map(|i| i as u8)
}

/// Largest power of two <= [`MAX_DIV`] dividing `n` (0 counts as divisible by the cap).
pub fn pow2_divisor(n: i64) -> u8 {
    if n == 0 {
        return MAX_DIV as u8;
    }
    let mut d: i64 = 1;
    while d < MAX_DIV && n % (d * 2) == 0 {
        d *= 2;
    }
    d as u8
}

/// What a compiled kernel assumes about one tensor argument (`TensorFacts`, less the
/// dtype and rank, which the parameter fixes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Facts {
    pub align16: bool,
    pub last_stride_one: bool,
    pub shape_div: Vec<u8>,
    pub stride_div: Vec<u8>,
}

/// A tensor or partition handle as its Python object describes it, given once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub storage: u64,
    pub handle: u64,
    /// Address of element `[0, ..., 0]` (device pointer on the GPU).
    pub address: u64,
    /// Byte offset of element `[0, ..., 0]` in the storage.
    pub offset: i64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub dtype: String,
    pub itemsize: u64,
    /// `Some` for a partition.
    pub tile: Option<Vec<i64>>,
    pub num_blocks: Option<u64>,
    /// The ordinal of the device whose memory this is (the interpreter models ordinals
    /// too): a launch runs on the device of its tensors.
    pub device: u32,
}

/// The layout of a view, apart from where it is: what a launch's decisions read of a
/// tensor besides its device and alignment ([`TensorDesc::same_launch_facts`]). Views of
/// one layout usually share one (`intern`), so a launch compares layouts by address, and
/// the shape and strides it packs are in cache whichever tensor it is.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub dtype: String,
    pub itemsize: u64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub tile: Option<Vec<i64>>,
    pub num_blocks: Option<u64>,
}

/// Layouts recently described, by hash: a tensor of a layout seen before shares its
/// `Arc`. Best effort (two layouts of one slot replace each other; equal layouts in two
/// `Arc`s still compare equal, by content), and bounded: it keeps at most this many alive.
const LAYOUT_SLOTS: usize = 64;
static LAYOUTS: std::sync::Mutex<[Option<Arc<Layout>>; LAYOUT_SLOTS]> =
    std::sync::Mutex::new([const { None }; LAYOUT_SLOTS]);

fn intern(layout: Layout) -> Arc<Layout> {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let slot =
        BuildHasherDefault::<DefaultHasher>::default().hash_one(&layout) as usize % LAYOUT_SLOTS;
    let Ok(mut seen) = LAYOUTS.lock() else {
        return Arc::new(layout);
    };
    match &seen[slot] {
        Some(l) if **l == layout => l.clone(),
        _ => {
            let l = Arc::new(layout);
            seen[slot] = Some(l.clone());
            l
        }
    }
}

/// A [`View`] and what every launch reads from it, computed once. The fields a launch
/// reads per call (a launch that reuses earlier decisions: the device, the layout's
/// address, where the bytes are, what to move in) come first, in 64 bytes: with thousands
/// of tensors alive, each line a launch touches per tensor is a cache miss. The bindings
/// keep it inside the tensor's Python object, right after the object's header (which a
/// launch reads anyway), rather than in an allocation of its own: a launch touches the
/// object and its descriptor as adjacent memory, not two unrelated lines. (`storage`,
/// `handle`, `address` and `device` are the view's, copied here.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(C)]
pub struct TensorDesc {
    pub storage: u64,
    pub handle: u64,
    pub address: u64,
    /// Bytes `[lo, hi)` touched, relative to the storage (the ledger's range).
    pub span: (u64, u64),
    pub layout: Arc<Layout>,
    pub device: u32,
    /// The registry slot of `handle` ([`crate::HandleAt`]; [`crate::NO_SLOT`] where the
    /// tensor was described without a registry): moving it in finds its record by index.
    pub slot: u32,
    /// Code of the dtype (`None`: a name no kernel parameter can have).
    pub dtype: Option<u8>,
    /// The address is a multiple of 16 (`facts.align16`).
    pub align16: bool,
    pub view: View,
    pub facts: Facts,
    /// Needs 64-bit indices (an extent or a dimension past `i32`).
    pub wide: bool,
}

impl TensorDesc {
    pub fn new(view: View) -> Result<TensorDesc, String> {
        let rank = view.shape.len();
        if view.strides.len() != rank {
            return Err(format!(
                "shape has {rank} axes but strides {}",
                view.strides.len()
            ));
        }
        if let Some(t) = &view.tile {
            if t.len() != rank {
                return Err(format!("tile shape has {} axes, tensor {rank}", t.len()));
            }
        }
        if view.shape.iter().any(|d| *d < 0) {
            return Err("negative extent".into());
        }
        let item = i128::from(view.itemsize);
        let off = i128::from(view.offset);
        let pairs = view.strides.iter().zip(&view.shape);
        let (lo, hi) = if view.shape.contains(&0) {
            (off, off)
        } else {
            let (mut neg, mut pos) = (0i128, 0i128);
            for (s, d) in pairs.clone() {
                let x = i128::from(*s) * i128::from(d - 1);
                neg += x.min(0);
                pos += x.max(0);
            }
            (off + neg * item, off + (pos + 1) * item)
        };
        let span = match (u64::try_from(lo), u64::try_from(hi)) {
            (Ok(a), Ok(b)) => (a, b),
            _ => return Err(format!("view spans bytes {lo}..{hi}")),
        };
        let extent: i128 = pairs
            .map(|(s, d)| i128::from(*s).abs() * i128::from((d - 1).max(0)))
            .sum();
        // Every shape and stride is passed in the index type: one past i32 (a stride of 2^31
        // on an axis of extent 1 spans nothing, but is still passed) needs i64.
        let wide = extent > INT32_LIMIT
            || view.shape.iter().any(|d| i128::from(*d) > INT32_LIMIT)
            || view
                .strides
                .iter()
                .any(|s| i128::from(*s).abs() > INT32_LIMIT);
        let facts = Facts {
            align16: view.address.is_multiple_of(16),
            last_stride_one: rank > 0 && (view.strides[rank - 1] == 1 || view.shape[rank - 1] == 1),
            shape_div: view.shape.iter().map(|d| pow2_divisor(*d)).collect(),
            stride_div: view.strides.iter().map(|s| pow2_divisor(*s)).collect(),
        };
        let layout = intern(Layout {
            dtype: view.dtype.clone(),
            itemsize: view.itemsize,
            shape: view.shape.clone(),
            strides: view.strides.clone(),
            tile: view.tile.clone(),
            num_blocks: view.num_blocks,
        });
        Ok(TensorDesc {
            storage: view.storage,
            handle: view.handle,
            address: view.address,
            span,
            layout,
            device: view.device,
            slot: crate::NO_SLOT,
            dtype: dtype_code(&view.dtype),
            align16: facts.align16,
            view,
            facts,
            wide,
        })
    }

    pub fn is_partition(&self) -> bool {
        self.view.tile.is_some()
    }

    /// Whether a launch decides the same for `other` as for `self`: the two agree on
    /// everything binding, the grid and the launch predicates read from a view (element
    /// type, shape, strides, tiling, block count, specialization facts, index width) and
    /// on the device (which runs the launch): all but where in that device's memory it is
    /// (storage, handle, address, offset, span), which the moves, the ledger ranges and the
    /// packed pointers read per call. ([`super::LaunchMemo`]
    /// reuses decisions on this; a test checks they agree.)
    pub fn same_launch_facts(&self, other: &TensorDesc) -> bool {
        std::ptr::eq(self, other) || other.has_launch_facts(self.device, self.align16, &self.layout)
    }

    /// Whether this view's launch facts are these ([`TensorDesc::same_launch_facts`] with
    /// a view described by its device, alignment and layout only: what a memo keeps of a
    /// tensor, which may be gone since).
    pub fn has_launch_facts(&self, device: u32, align16: bool, layout: &Arc<Layout>) -> bool {
        // (The other facts — divisibility, unit last stride, index width — are functions
        // of the shape and strides compared here; alignment is the address's.)
        // (The layout holds the element type by name, which decides its code.)
        self.device == device
            && self.align16 == align16
            && (Arc::ptr_eq(&self.layout, layout) || *self.layout == **layout)
    }
}
