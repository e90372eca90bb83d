//! `#[forge_struct]`: user structs as binding elements, locals, helper arguments and
//! results, and workgroup array elements, with the user's struct as the host type. GPU ==
//! oracle == an independent reference, on odd sizes and past 65535 workgroups, and
//! certification with every field drawn as its own type.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify_default, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

#[forge_module]
mod particles {
    use wgsl_forge::prelude::*;

    /// A particle: WGSL aligns `vel` (a `Vec3`) to 16 bytes and `mass` fills its last four,
    /// so the layout needs no padding.
    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Particle {
        pub pos: Vec4,
        pub vel: Vec3,
        pub mass: f32,
        pub hits: [u32; 2],
        pub cell: IVec2,
    }

    /// A record with a scalar before a vector: the padding is explicit.
    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Default)]
    pub struct Sample {
        pub weight: f32,
        pub _pad0: [u32; 3],
        pub value: Vec4,
    }

    /// A helper that takes and gives a struct.
    #[forge_fn]
    fn drift(p: Particle, dt: f32) -> Particle {
        let mut q = p;
        q.pos += Vec4::new(p.vel.x, p.vel.y, p.vel.z, 0.0) * dt;
        q.hits[0] = p.hits[0] + 1;
        q
    }

    /// Moves every particle, bounces it off the floor `y = 0`, and gives its kinetic
    /// energy; structs are read and written whole and field by field.
    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn integrate(ps: &mut [Particle; n], #[out] energy: &mut [f32; n], n: u32, dt: f32) {
        let i = global_index();
        if i < n {
            let mut p = drift(ps[i], dt);
            if p.pos.y < 0.0 {
                p.pos.y = -p.pos.y;
                p.vel.y = -p.vel.y;
                p.hits[1] += 1;
            }
            p.cell = IVec2::new(p.pos.x.floor() as i32, p.pos.z.floor() as i32);
            ps[i] = p;
            ps[i].mass = p.mass;
            energy[i] = 0.5 * p.mass * p.vel.dot(p.vel);
        }
    }

    /// Weighted sums per workgroup through a workgroup array of structs, and a struct
    /// built field by field in a literal.
    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn weighted(xs: &[Sample; n], #[out] sums: &mut [Sample; n.div_ceil(64)], n: u32) {
        #[shared]
        let mut tile = [Sample::zeroed(); 64];
        let i = global_index();
        let lid = local_index();
        let mut s = Sample::zeroed();
        if i < n {
            let x = xs[i];
            let pad = [0u32; 3];
            s = Sample {
                value: x.value * x.weight,
                weight: x.weight,
                _pad0: pad,
            };
        }
        tile[lid] = s;
        workgroup_barrier();
        if lid == 0 {
            let mut acc = tile[0];
            for k in 1..64u32 {
                acc.weight += tile[k].weight;
                acc.value += tile[k].value;
            }
            sums[workgroup_index()] = acc;
        }
    }
}

use particles::*;

fn particles(rng: &mut ChaCha8Rng, n: usize) -> Vec<Particle> {
    let mut f = |lo: f32, hi: f32| rng.gen_range(lo..hi);
    (0..n)
        .map(|_| Particle {
            pos: [f(-4.0, 4.0), f(-0.5, 2.0), f(-4.0, 4.0), 1.0],
            vel: [f(-2.0, 2.0), f(-3.0, 1.0), f(-2.0, 2.0)],
            mass: f(0.5, 2.0),
            hits: [0, 7],
            cell: [-1, -1],
        })
        .collect()
}

/// The step from the physics, in f64.
fn integrate_reference(ps: &[Particle], dt: f32) -> (Vec<Particle>, Vec<f64>) {
    let (mut out, mut energy) = (Vec::new(), Vec::new());
    for p in ps {
        let mut q = *p;
        for c in 0..3 {
            q.pos[c] = (p.pos[c] as f64 + p.vel[c] as f64 * dt as f64) as f32;
        }
        q.hits[0] += 1;
        if q.pos[1] < 0.0 {
            q.pos[1] = -q.pos[1];
            q.vel[1] = -q.vel[1];
            q.hits[1] += 1;
        }
        q.cell = [q.pos[0].floor() as i32, q.pos[2].floor() as i32];
        let v2: f64 = q.vel.iter().map(|v| (*v as f64).powi(2)).sum();
        energy.push(0.5 * q.mass as f64 * v2);
        out.push(q);
    }
    (out, energy)
}

#[test]
fn struct_bindings_locals_and_helpers_match_the_physics() {
    assert_eq!(std::mem::size_of::<Particle>(), 48);
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut rt = rt();
    for n in [1usize, 7, 1001, 70001] {
        let start = particles(&mut rng, n);
        let (want, want_e) = integrate_reference(&start, 0.25);
        let (mut gpu, mut cpu) = (start.clone(), start.clone());
        let (ge, ce) = if n > 65535 {
            let s = common::one_per_group(integrate::DEFAULT_SCHEDULE);
            (
                integrate::run_with(&mut rt, &s, &mut gpu, n as u32, 0.25).unwrap(),
                integrate::cpu_with(&s, &mut cpu, n as u32, 0.25).unwrap(),
            )
        } else {
            (
                rt.integrate(&mut gpu, n as u32, 0.25).unwrap(),
                integrate::cpu(&mut cpu, n as u32, 0.25).unwrap(),
            )
        };
        for i in 0..n {
            // One multiply-add a component: the oracle's f32 is the f64 value rounded once
            // or fused; the GPU may fuse it too.
            for c in 0..4 {
                let close = |a: f32, b: f32| (a - b).abs() <= 1e-6 * (1.0 + b.abs());
                assert!(close(cpu[i].pos[c], want[i].pos[c]), "oracle pos {i}.{c}");
                assert!(close(gpu[i].pos[c], cpu[i].pos[c]), "GPU pos {i}.{c}");
            }
            assert_eq!(
                (cpu[i].vel, cpu[i].mass, cpu[i].hits),
                (want[i].vel, want[i].mass, want[i].hits),
                "oracle {i}"
            );
            assert_eq!(
                (gpu[i].vel, gpu[i].mass, gpu[i].hits),
                (cpu[i].vel, cpu[i].mass, cpu[i].hits),
                "GPU {i}"
            );
            assert_eq!(cpu[i].cell, want[i].cell, "oracle cell {i}");
            assert_eq!(gpu[i].cell, cpu[i].cell, "GPU cell {i}");
            assert!(
                (ce[i] as f64 - want_e[i]).abs() <= 1e-5 * (1.0 + want_e[i]),
                "oracle energy {i}"
            );
            assert!(
                (ge[i] - ce[i]).abs() <= 1e-5 * (1.0 + ce[i].abs()),
                "GPU energy {i}"
            );
        }
    }
}

#[test]
fn workgroup_arrays_of_structs_and_struct_literals() {
    assert_eq!(std::mem::size_of::<Sample>(), 32);
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut rt = rt();
    for n in [3usize, 64 * 11 + 9] {
        // Weights and values on grids whose products and sums are exact in f32.
        let xs: Vec<Sample> = (0..n)
            .map(|_| Sample {
                weight: rng.gen_range(0..8) as f32 / 4.0,
                value: [0; 4].map(|_: i32| rng.gen_range(-64i32..64) as f32 / 8.0),
                ..Default::default()
            })
            .collect();
        let want: Vec<Sample> = xs
            .chunks(64)
            .map(|c| Sample {
                weight: c.iter().map(|s| s.weight).sum(),
                value: [0, 1, 2, 3].map(|k| c.iter().map(|s| s.value[k] * s.weight).sum()),
                ..Default::default()
            })
            .collect();
        assert_eq!(
            weighted::cpu(&xs, n as u32).unwrap(),
            want,
            "oracle, n = {n}"
        );
        assert_eq!(rt.weighted(&xs, n as u32).unwrap(), want, "GPU, n = {n}");
    }
}

#[test]
fn struct_tensors_stay_on_the_device() {
    let mut rng = ChaCha8Rng::seed_from_u64(43);
    let mut rt = rt();
    let n = 500;
    let start = particles(&mut rng, n);
    let ps = rt.upload(&start).unwrap();
    let energy = rt.zeros::<f32>(n).unwrap();
    integrate::launch(&mut rt, &ps, &energy, n as u32, 0.25).unwrap();
    integrate::launch(&mut rt, &ps, &energy, n as u32, 0.25).unwrap();
    let gpu = rt.download(&ps).unwrap();
    let mut cpu = start.clone();
    integrate::cpu(&mut cpu, n as u32, 0.25).unwrap();
    integrate::cpu(&mut cpu, n as u32, 0.25).unwrap();
    for i in 0..n {
        assert_eq!(gpu[i].hits, cpu[i].hits, "{i}");
        for c in 0..4 {
            assert!((gpu[i].pos[c] - cpu[i].pos[c]).abs() <= 1e-5, "{i}.{c}");
        }
    }
}

#[test]
fn struct_kernels_certify_with_each_field_drawn_as_its_type() {
    let mut rt = rt();
    for kernel in [&integrate::Kernel as &dyn Kernel, &weighted::Kernel] {
        let report = certify_default(&mut rt, kernel, &CertOptions::default()).unwrap();
        assert!(report.passed(), "{}: {:?}", kernel.name(), report.failures);
        assert!(report.cases >= 3);
    }
    // The layout the certifier reads a struct with.
    let elem = <Particle as wgsl_forge::Element>::ELEM;
    assert_eq!(elem.size(), 48);
    let layout = elem.layout.unwrap();
    let names: Vec<&str> = layout.fields.iter().map(|f| f.name).collect();
    assert_eq!(names, ["pos", "vel", "mass", "hits", "cell"]);
    let offsets: Vec<u32> = layout.fields.iter().map(|f| f.offset).collect();
    assert_eq!(offsets, [0, 16, 28, 32, 40]);
    assert_eq!(elem.word_scalar(9), ScalarType::U32);
    assert_eq!(elem.word_scalar(10), ScalarType::I32);
    assert_eq!(elem.word_scalar(7), ScalarType::F32);
}

#[test]
fn the_wgsl_declares_the_struct_as_naga_lays_it_out() {
    assert!(
        integrate::WGSL.contains("struct Particle {"),
        "{}",
        integrate::WGSL
    );
    assert!(integrate::WGSL.contains("array<Particle>"));
    assert!(weighted::WGSL.contains("var<workgroup> tile: array<Sample, 64>;"));
    let module = naga::front::wgsl::parse_str(integrate::WGSL).unwrap();
    let (_, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("Particle"))
        .unwrap();
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("not a struct")
    };
    assert_eq!(*span as usize, std::mem::size_of::<Particle>());
    let offsets: Vec<u32> = members.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, [0, 16, 28, 32, 40]);
}

use wgsl_forge::ScalarType;
