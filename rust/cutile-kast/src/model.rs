//! The tree, one Rust type per node kind of `docs/kernel-ast.md`.

use serde::{Deserialize, Serialize};

// `Target`, `Stmt` and `Expr` deserialize through the streaming visitors of `stream.rs`.

/// The whole document: source files, the entry's name, and every function it reaches.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Document {
    pub schema: String,
    pub version: u32,
    pub files: Vec<SourceFile>,
    pub entry: String,
    pub functions: Vec<Function>,
}

impl Document {
    /// The function named `name`, if the document has it.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The entry function (validated to exist by [`crate::parse`]).
    pub fn entry_function(&self) -> Option<&Function> {
        self.function(&self.entry)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    pub source: String,
}

/// A source range: `lo`/`hi` are UTF-8 byte offsets into `files[file].source`; `line` is
/// 1-based, `col`/`end_col` 0-based byte columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    pub file: u32,
    pub lo: u32,
    pub hi: u32,
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    pub end_col: u32,
}

impl Span {
    /// Does `self` lie inside `outer` (same file)?
    pub fn within(&self, outer: &Span) -> bool {
        self.file == outer.file && outer.lo <= self.lo && self.hi <= outer.hi
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionKind {
    Entry,
    Device,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Options {
    #[serde(default)]
    pub deny_in_kernel_checks: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Function {
    pub name: String,
    pub kind: FunctionKind,
    #[serde(rename = "unsafe", default)]
    pub is_unsafe: bool,
    #[serde(default)]
    pub options: Options,
    pub span: Span,
    pub name_span: Span,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    MutTensor,
    Tensor,
    /// `Atomic[Tensor[...]]`: shared by every block, accessed only by atomic operations.
    AtomicTensor,
    Const,
    Scalar,
    Ptr,
    Value,
}

/// One item of a shape: an int `>= 1`, `-1` (dynamic), or the name of a `Const` parameter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    Int(i64),
    Name(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub span: Span,
    pub kind: ParamKind,
    #[serde(default)]
    pub dtype: Option<String>,
    #[serde(default)]
    pub shape: Option<Vec<Dim>>,
}

/// An assignment target.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Name { id: String, span: Span },
    Tuple { elts: Vec<Target>, span: Span },
}

impl Target {
    pub fn span(&self) -> Span {
        match self {
            Target::Name { span, .. } | Target::Tuple { span, .. } => *span,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Stmt {
    Assign {
        targets: Vec<Target>,
        value: Expr,
        span: Span,
        nid: u32,
    },
    #[serde(rename = "augassign")]
    AugAssign {
        target: Target,
        op: BinOp,
        value: Expr,
        span: Span,
        nid: u32,
    },
    Expr {
        value: Expr,
        span: Span,
        nid: u32,
    },
    If {
        test: Expr,
        body: Vec<Stmt>,
        #[serde(default)]
        orelse: Vec<Stmt>,
        span: Span,
        nid: u32,
    },
    For {
        target: Target,
        iter: Expr,
        body: Vec<Stmt>,
        span: Span,
        nid: u32,
    },
    While {
        test: Expr,
        body: Vec<Stmt>,
        span: Span,
        nid: u32,
    },
    Break {
        span: Span,
        nid: u32,
    },
    Continue {
        span: Span,
        nid: u32,
    },
    Pass {
        span: Span,
        nid: u32,
    },
    Return {
        #[serde(default)]
        value: Option<Expr>,
        span: Span,
        nid: u32,
    },
    Unsafe {
        body: Vec<Stmt>,
        span: Span,
        nid: u32,
    },
    Assert {
        test: Expr,
        #[serde(default)]
        msg: Option<String>,
        span: Span,
        nid: u32,
    },
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Assign { span, .. }
            | Stmt::AugAssign { span, .. }
            | Stmt::Expr { span, .. }
            | Stmt::If { span, .. }
            | Stmt::For { span, .. }
            | Stmt::While { span, .. }
            | Stmt::Break { span, .. }
            | Stmt::Continue { span, .. }
            | Stmt::Pass { span, .. }
            | Stmt::Return { span, .. }
            | Stmt::Unsafe { span, .. }
            | Stmt::Assert { span, .. } => *span,
        }
    }

    /// The node id: unique among the document's statements and expressions.
    pub fn nid(&self) -> u32 {
        match self {
            Stmt::Assign { nid, .. }
            | Stmt::AugAssign { nid, .. }
            | Stmt::Expr { nid, .. }
            | Stmt::If { nid, .. }
            | Stmt::For { nid, .. }
            | Stmt::While { nid, .. }
            | Stmt::Break { nid, .. }
            | Stmt::Continue { nid, .. }
            | Stmt::Pass { nid, .. }
            | Stmt::Return { nid, .. }
            | Stmt::Unsafe { nid, .. }
            | Stmt::Assert { nid, .. } => *nid,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Floordiv,
    Mod,
    Pow,
    Lshift,
    Rshift,
    Bitand,
    Bitor,
    Bitxor,
    Matmul,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoolOp {
    And,
    Or,
}

/// A Python literal. Strings and `None` appear only as option values (`padding="zero"`,
/// an absent optional argument); floats may be non-finite.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ConstValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    None,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expr {
    Name {
        id: String,
        span: Span,
        nid: u32,
    },
    Const {
        value: ConstValue,
        #[serde(rename = "type", default)]
        ty: Option<String>,
        span: Span,
        nid: u32,
    },
    Dtype {
        name: String,
        span: Span,
        nid: u32,
    },
    Tuple {
        elts: Vec<Expr>,
        span: Span,
        nid: u32,
    },
    Binop {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
        span: Span,
        nid: u32,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
        span: Span,
        nid: u32,
    },
    Compare {
        op: CmpOp,
        left: Box<Expr>,
        right: Box<Expr>,
        span: Span,
        nid: u32,
    },
    Boolop {
        op: BoolOp,
        values: Vec<Expr>,
        span: Span,
        nid: u32,
    },
    Ifexp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
        span: Span,
        nid: u32,
    },
    Call {
        func: String,
        #[serde(default)]
        args: Vec<Expr>,
        span: Span,
        nid: u32,
    },
    CallDevice {
        func: String,
        #[serde(default)]
        args: Vec<Expr>,
        span: Span,
        nid: u32,
    },
    Method {
        receiver: Box<Expr>,
        method: String,
        #[serde(default)]
        args: Vec<Expr>,
        span: Span,
        nid: u32,
    },
    Attribute {
        value: Box<Expr>,
        attr: String,
        span: Span,
        nid: u32,
    },
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
        span: Span,
        nid: u32,
    },
    /// `cutile.ByTarget(sm_90=3, default=2)`: one compile-time value per GPU architecture
    /// (`archs[k]` takes `values[k]`; `default` is the name of the fallback), for a load
    /// hint. tileiras picks the value of the architecture it compiles for.
    ByTarget {
        archs: Vec<String>,
        values: Vec<Expr>,
        span: Span,
        nid: u32,
    },
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Name { span, .. }
            | Expr::Const { span, .. }
            | Expr::Dtype { span, .. }
            | Expr::Tuple { span, .. }
            | Expr::Binop { span, .. }
            | Expr::Unary { span, .. }
            | Expr::Compare { span, .. }
            | Expr::Boolop { span, .. }
            | Expr::Ifexp { span, .. }
            | Expr::Call { span, .. }
            | Expr::CallDevice { span, .. }
            | Expr::Method { span, .. }
            | Expr::Attribute { span, .. }
            | Expr::Subscript { span, .. }
            | Expr::ByTarget { span, .. } => *span,
        }
    }

    /// The node id: unique among the document's statements and expressions.
    pub fn nid(&self) -> u32 {
        match self {
            Expr::Name { nid, .. }
            | Expr::Const { nid, .. }
            | Expr::Dtype { nid, .. }
            | Expr::Tuple { nid, .. }
            | Expr::Binop { nid, .. }
            | Expr::Unary { nid, .. }
            | Expr::Compare { nid, .. }
            | Expr::Boolop { nid, .. }
            | Expr::Ifexp { nid, .. }
            | Expr::Call { nid, .. }
            | Expr::CallDevice { nid, .. }
            | Expr::Method { nid, .. }
            | Expr::Attribute { nid, .. }
            | Expr::Subscript { nid, .. }
            | Expr::ByTarget { nid, .. } => *nid,
        }
    }

    /// Is this the literal `None` (an absent optional argument)?
    pub fn is_none_literal(&self) -> bool {
        matches!(
            self,
            Expr::Const {
                value: ConstValue::None,
                ..
            }
        )
    }

    /// Visit this expression and every sub-expression, parents first.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Name { .. } | Expr::Const { .. } | Expr::Dtype { .. } => {}
            Expr::Tuple { elts, .. } => elts.iter().for_each(|e| e.walk(f)),
            Expr::Binop { left, right, .. } | Expr::Compare { left, right, .. } => {
                left.walk(f);
                right.walk(f);
            }
            Expr::Unary { operand, .. } => operand.walk(f),
            Expr::Boolop { values, .. } | Expr::ByTarget { values, .. } => {
                values.iter().for_each(|e| e.walk(f))
            }
            Expr::Ifexp {
                test, body, orelse, ..
            } => {
                test.walk(f);
                body.walk(f);
                orelse.walk(f);
            }
            Expr::Call { args, .. } | Expr::CallDevice { args, .. } => {
                args.iter().for_each(|e| e.walk(f));
            }
            Expr::Method { receiver, args, .. } => {
                receiver.walk(f);
                args.iter().for_each(|e| e.walk(f));
            }
            Expr::Attribute { value, .. } => value.walk(f),
            Expr::Subscript { value, index, .. } => {
                value.walk(f);
                index.walk(f);
            }
        }
    }
}

/// Visit every statement of a body, recursively, parents first.
pub fn walk_stmts<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in body {
        f(s);
        match s {
            Stmt::If { body, orelse, .. } => {
                walk_stmts(body, f);
                walk_stmts(orelse, f);
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::Unsafe { body, .. } => {
                walk_stmts(body, f)
            }
            _ => {}
        }
    }
}

/// The expressions directly held by a statement (not those of nested statements).
pub fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match s {
        Stmt::Assign { value, .. } | Stmt::AugAssign { value, .. } | Stmt::Expr { value, .. } => {
            vec![value]
        }
        Stmt::If { test, .. } | Stmt::While { test, .. } | Stmt::Assert { test, .. } => {
            vec![test]
        }
        Stmt::For { iter, .. } => vec![iter],
        Stmt::Return { value, .. } => value.iter().collect(),
        Stmt::Break { .. } | Stmt::Continue { .. } | Stmt::Pass { .. } | Stmt::Unsafe { .. } => {
            vec![]
        }
    }
}

/// The span of every node of a statement tree that the validator must check.
pub(crate) fn target_spans(t: &Target, out: &mut Vec<Span>) {
    out.push(t.span());
    if let Target::Tuple { elts, .. } = t {
        for e in elts {
            target_spans(e, out);
        }
    }
}
