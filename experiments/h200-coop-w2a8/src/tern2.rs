//! W2A8 v2: split over columns, x in registers, per-row warp sums combined in workgroup
//! memory. Lane `l` of warp `w` owns words `(ch·32 + l)·CH ..+CH` of chunk `ch`.
use std::fmt::Write;

#[derive(Clone, Copy, Debug)]
pub struct Cfg2 {
    pub ch: u32,
    pub nw: u32,
    pub rb: u32,
    pub ru: u32,
}

pub fn configs() -> Vec<Cfg2> {
    let mut v = Vec::new();
    for &ch in &[4, 8] {
        for &nw in &[4, 8] {
            for &rb in &[16, 32, 64] {
                for &ru in &[1, 2, 4] {
                    v.push(Cfg2 { ch, nw, rb, ru });
                }
            }
        }
    }
    v
}

fn decode(w: &mut String, word: &str, xs: &str, acc: &str) {
    writeln!(w, "      {{ let lo = {word} & 0x55555555u; let hi = ({word} >> 1u) & 0x55555555u;").unwrap();
    writeln!(w, "        let e = ((lo & ~hi) << 1u) | (~(lo ^ hi) & 0x55555555u);").unwrap();
    writeln!(w, "        {acc}a += dot4I8Packed(e & 0x03030303u, {xs}.x) + dot4I8Packed((e >> 6u) & 0x03030303u, {xs}.w);").unwrap();
    writeln!(w, "        {acc}b += dot4I8Packed(e & 0x0c0c0c0cu, {xs}.y);").unwrap();
    writeln!(w, "        {acc}c += dot4I8Packed(e & 0x30303030u, {xs}.z); }}").unwrap();
}

pub fn wgsl(c: &Cfg2, k: u32) -> String {
    let words = k / 16;
    let chunks = words / (32 * c.ch);
    let mut s = String::new();
    let w = &mut s;
    writeln!(w, "@group(0) @binding(0) var<storage, read> pw: array<vec4<u32>>;").unwrap();
    writeln!(w, "@group(0) @binding(1) var<storage, read> xv: array<vec4<u32>>;").unwrap();
    writeln!(w, "@group(0) @binding(2) var<storage, read_write> y: array<i32>;").unwrap();
    writeln!(w, "var<workgroup> part: array<i32, {}>;", c.nw * c.rb).unwrap();
    writeln!(w, "@compute @workgroup_size({})", c.nw * 32).unwrap();
    writeln!(w, "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {{").unwrap();
    writeln!(w, "  let lane = li % 32u; let warp = li / 32u;").unwrap();
    writeln!(w, "  let row0 = wid.x * {}u;", c.rb).unwrap();
    writeln!(w, "  for (var ch = warp; ch < {chunks}u; ch += {}u) {{", c.nw).unwrap();
    writeln!(w, "    let g0 = (ch * 32u + lane) * {}u;", c.ch).unwrap();
    for i in 0..c.ch {
        writeln!(w, "    let x{i} = xv[g0 + {i}u];").unwrap();
    }
    writeln!(w, "    for (var r = 0u; r < {}u; r += {}u) {{", c.rb, c.ru).unwrap();
    for u in 0..c.ru {
        for q in 0..c.ch / 4 {
            writeln!(w, "      let w{u}_{q} = pw[((row0 + r + {u}u) * {words}u + g0) / 4u + {q}u];").unwrap();
        }
    }
    for u in 0..c.ru {
        writeln!(w, "      var s{u}a: i32 = 0; var s{u}b: i32 = 0; var s{u}c: i32 = 0;").unwrap();
        for i in 0..c.ch {
            let comp = ["x", "y", "z", "w"][(i % 4) as usize];
            decode(w, &format!("w{u}_{}.{comp}", i / 4), &format!("x{i}"), &format!("s{u}"));
        }
        writeln!(w, "      let t{u} = subgroupAdd(s{u}a + (s{u}b >> 2u) + (s{u}c >> 4u));").unwrap();
        writeln!(w, "      if (lane == 0u) {{ part[warp * {}u + r + {u}u] += t{u}; }}", c.rb).unwrap();
    }
    writeln!(w, "    }}\n  }}").unwrap();
    writeln!(w, "  workgroupBarrier();").unwrap();
    writeln!(w, "  for (var r = li; r < {}u; r += {}u) {{", c.rb, c.nw * 32).unwrap();
    writeln!(w, "    var t: i32 = 0;").unwrap();
    for q in 0..c.nw {
        writeln!(w, "    t += part[{q}u * {}u + r];", c.rb).unwrap();
    }
    writeln!(w, "    y[row0 + r] = t;\n  }}\n}}").unwrap();
    s
}

/// Whether a config fits shape (m, k).
pub fn fits(c: &Cfg2, m: u32, k: u32) -> bool {
    let words = k / 16;
    words % (32 * c.ch) == 0 && m % c.rb == 0 && c.rb % c.ru == 0
}
