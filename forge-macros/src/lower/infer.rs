//! Type inference for the kernel body, in the manner of Rust's for the subset we accept:
//! every expression and local gets a variable; operators unify their operands; unsuffixed
//! literals are "some integer" or "some float" until context decides, then default to
//! `i32` and `f32` as Rust's do.
//!
//! Part of `lower` (layer 3).

use crate::model::{ConstLen, CoopRole, Scalar, Ty};

/// The set of scalars a variable may still become, as bits.
pub type Set = u8;
pub const S_F32: Set = 1;
pub const S_U32: Set = 2;
pub const S_I32: Set = 4;
pub const S_F16: Set = 8;
pub const S_BOOL: Set = 16;
pub const S_F64: Set = 32;
pub const S_INT: Set = S_U32 | S_I32;
pub const S_FLOAT: Set = S_F32 | S_F16 | S_F64;
pub const S_NUM: Set = S_INT | S_FLOAT;
pub const S_ANY: Set = S_NUM | S_BOOL;

pub fn bit(s: Scalar) -> Set {
    match s {
        Scalar::F32 => S_F32,
        Scalar::U32 => S_U32,
        Scalar::I32 => S_I32,
        Scalar::F16 => S_F16,
        Scalar::F64 => S_F64,
        Scalar::Bool => S_BOOL,
    }
}

pub fn describe_set(set: Set) -> String {
    match set {
        S_INT => "an integer".into(),
        S_FLOAT => "a float".into(),
        S_NUM => "a number".into(),
        _ => {
            let mut names = Vec::new();
            for (b, n) in [
                (S_F32, "`f32`"),
                (S_U32, "`u32`"),
                (S_I32, "`i32`"),
                (S_F16, "`f16`"),
                (S_F64, "`f64`"),
                (S_BOOL, "`bool`"),
            ] {
                if set & b != 0 {
                    names.push(n);
                }
            }
            names.join(" or ")
        }
    }
}

#[derive(Clone, Debug)]
enum Info {
    /// Nothing known yet (a `let` without initializer): may become an array too.
    Unknown,
    /// One of these scalars.
    Set(Set),
    /// An array of the element variable.
    Array(usize, ConstLen),
    /// A vector.
    Vector(Scalar, u8),
    /// A `#[forge_struct]`, by index.
    Struct(usize),
    /// A cooperative matrix.
    Coop(Scalar, CoopRole),
    /// The type of something already reported as an error (a `let` whose value was
    /// refused): it agrees with every use, so that one mistake gives one error.
    Error,
}

pub struct Infer {
    parent: Vec<usize>,
    info: Vec<Info>,
}

impl Infer {
    pub fn new() -> Self {
        Infer {
            parent: Vec::new(),
            info: Vec::new(),
        }
    }

    pub fn fresh(&mut self) -> usize {
        self.parent.push(self.parent.len());
        self.info.push(Info::Unknown);
        self.parent.len() - 1
    }

    /// A variable for a value already reported as an error; see `Info::Error`.
    pub fn error(&mut self) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Error;
        v
    }

    pub fn of_set(&mut self, set: Set) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Set(set);
        v
    }

    pub fn of_scalar(&mut self, s: Scalar) -> usize {
        self.of_set(bit(s))
    }

    pub fn of_vector(&mut self, s: Scalar, n: u8) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Vector(s, n);
        v
    }

    /// The component type and width of a variable known to be a vector.
    pub fn vector(&mut self, v: usize) -> Option<(Scalar, u8)> {
        let r = self.find(v);
        match self.info[r] {
            Info::Vector(s, n) => Some((s, n)),
            _ => None,
        }
    }

    pub fn of_struct(&mut self, s: usize) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Struct(s);
        v
    }

    /// The struct of a variable known to be one.
    pub fn strukt(&mut self, v: usize) -> Option<usize> {
        let r = self.find(v);
        match self.info[r] {
            Info::Struct(s) => Some(s),
            _ => None,
        }
    }

    pub fn of_coop(&mut self, s: Scalar, role: CoopRole) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Coop(s, role);
        v
    }

    /// The element type and role of a variable known to be a cooperative matrix.
    pub fn coop(&mut self, v: usize) -> Option<(Scalar, CoopRole)> {
        let r = self.find(v);
        match self.info[r] {
            Info::Coop(s, role) => Some((s, role)),
            _ => None,
        }
    }

    /// Whether a variable is the type of something already reported as an error.
    pub fn is_error(&mut self, v: usize) -> bool {
        let r = self.find(v);
        matches!(self.info[r], Info::Error)
    }

    pub fn of_array(&mut self, elem: usize, len: ConstLen) -> usize {
        let v = self.fresh();
        self.info[v] = Info::Array(elem, len);
        v
    }

    fn find(&mut self, v: usize) -> usize {
        let mut r = v;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        let mut c = v;
        while self.parent[c] != r {
            let n = self.parent[c];
            self.parent[c] = r;
            c = n;
        }
        r
    }

    /// The element variable of an array variable, if it is known to be an array.
    pub fn array_elem(&mut self, v: usize) -> Option<usize> {
        let r = self.find(v);
        match &self.info[r] {
            Info::Array(e, _) => Some(*e),
            Info::Error => Some(self.error()),
            _ => None,
        }
    }

    pub fn is_array(&mut self, v: usize) -> bool {
        self.array_elem(v).is_some()
    }

    /// Restricts a variable to a set of scalars. Returns a message on conflict.
    pub fn constrain(&mut self, v: usize, set: Set) -> Result<(), String> {
        let r = self.find(v);
        match self.info[r].clone() {
            Info::Error => Ok(()),
            Info::Unknown => {
                self.info[r] = Info::Set(set);
                Ok(())
            }
            Info::Set(s) => {
                if s & set == 0 {
                    Err(format!(
                        "expected {}, found {}",
                        describe_set(set),
                        describe_set(s)
                    ))
                } else {
                    self.info[r] = Info::Set(s & set);
                    Ok(())
                }
            }
            Info::Array(..) => Err(format!("expected {}, found an array", describe_set(set))),
            Info::Vector(s, n) => Err(format!(
                "expected {}, found a vector `vec{n}<{}>`",
                describe_set(set),
                s.wgsl()
            )),
            Info::Struct(_) => Err(format!("expected {}, found a struct", describe_set(set))),
            Info::Coop(s, role) => Err(format!(
                "expected {}, found a cooperative matrix `{}<{}>`",
                describe_set(set),
                role.type_name(),
                s.wgsl()
            )),
        }
    }

    /// Makes two variables the same type. Returns a message on conflict.
    pub fn unify(&mut self, a: usize, b: usize) -> Result<(), String> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let merged = match (self.info[ra].clone(), self.info[rb].clone()) {
            (Info::Error, _) | (_, Info::Error) => Info::Error,
            (Info::Unknown, x) | (x, Info::Unknown) => x,
            (Info::Set(x), Info::Set(y)) => {
                if x & y == 0 {
                    return Err(format!(
                        "mismatched types: expected {}, found {}",
                        describe_set(x),
                        describe_set(y)
                    ));
                }
                Info::Set(x & y)
            }
            (Info::Array(ea, la), Info::Array(eb, lb)) => {
                if la != lb {
                    return Err("mismatched array lengths".into());
                }
                self.unify(ea, eb)?;
                Info::Array(ea, la)
            }
            (Info::Vector(a, n), Info::Vector(b, m)) => {
                if a != b || n != m {
                    // WGSL has no `vec8`: the language's one eight-wide vector is `HVec8`.
                    let text = |s: Scalar, n: u8| match (s, n) {
                        (Scalar::F16, 8) => "HVec8".to_string(),
                        _ => format!("vec{n}<{}>", s.wgsl()),
                    };
                    return Err(format!(
                        "mismatched types: expected `{}`, found `{}`",
                        text(a, n),
                        text(b, m)
                    ));
                }
                Info::Vector(a, n)
            }
            (Info::Struct(a), Info::Struct(b)) => {
                if a != b {
                    return Err("mismatched types: these are two different structs".into());
                }
                Info::Struct(a)
            }
            (Info::Coop(a, ra), Info::Coop(b, rb)) => {
                if a != b || ra != rb {
                    return Err(format!(
                        "mismatched types: expected `{}<{}>`, found `{}<{}>`",
                        ra.type_name(),
                        a.wgsl(),
                        rb.type_name(),
                        b.wgsl()
                    ));
                }
                Info::Coop(a, ra)
            }
            (Info::Coop(a, r), _) => {
                return Err(format!(
                    "expected a cooperative matrix `{}<{}>`, found another type",
                    r.type_name(),
                    a.wgsl()
                ))
            }
            (_, Info::Coop(a, r)) => {
                return Err(format!(
                    "expected this type, found a cooperative matrix `{}<{}>`",
                    r.type_name(),
                    a.wgsl()
                ))
            }
            (Info::Struct(_), _) => {
                return Err("mismatched types: expected a struct, found another type".into())
            }
            (_, Info::Struct(_)) => {
                return Err("mismatched types: expected this type, found a struct".into())
            }
            (Info::Vector(a, n), _) => {
                return Err(format!(
                    "expected a vector `vec{n}<{}>`, found another type",
                    a.wgsl()
                ))
            }
            (_, Info::Vector(a, n)) => {
                return Err(format!(
                    "expected a scalar or an array, found a vector `vec{n}<{}>`",
                    a.wgsl()
                ))
            }
            (Info::Array(..), Info::Set(s)) => {
                return Err(format!("expected an array, found {}", describe_set(s)))
            }
            (Info::Set(s), Info::Array(..)) => {
                return Err(format!("expected {}, found an array", describe_set(s)))
            }
        };
        self.parent[rb] = ra;
        self.info[ra] = merged;
        Ok(())
    }

    /// The solved type: unsettled integers default to `i32`, floats to `f32`, as in Rust.
    pub fn resolve(&mut self, v: usize) -> Option<Ty> {
        let r = self.find(v);
        match self.info[r].clone() {
            Info::Unknown => None,
            Info::Set(s) => {
                let pick = [
                    (S_I32, Scalar::I32),
                    (S_F32, Scalar::F32),
                    (S_U32, Scalar::U32),
                    (S_F16, Scalar::F16),
                    (S_F64, Scalar::F64),
                    (S_BOOL, Scalar::Bool),
                ]
                .into_iter()
                .find(|(b, _)| s & b != 0)?;
                Some(Ty::Scalar(pick.1))
            }
            Info::Array(e, len) => Some(Ty::Array(Box::new(self.resolve(e)?), len)),
            Info::Vector(s, n) => Some(Ty::Vector(s, n)),
            Info::Struct(s) => Some(Ty::Struct(s)),
            Info::Coop(s, r) => Some(Ty::Coop(s, r)),
            // The kernel has an error already, so nothing is emitted: any type will do.
            Info::Error => Some(Ty::Scalar(Scalar::F32)),
        }
    }
}
