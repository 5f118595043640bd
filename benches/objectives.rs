//! Cost of one evaluation of each model's evidence and gradient, against the machine's gemm rate
//! and its floating-point peak.
//!
//! `cargo bench --bench objectives [-- --threads T] [-- --quick] [-- --only ssgp,fitc,vfe,full]
//! [-- --m 100,200]` prints first one JSON object describing the machine, then one per case;
//! `--only` keeps the named methods, `--m` sets the m of the SSGP, FITC and VFE cases (default
//! 50, 100, 250, 375).
//!
//! The machine line: `cpu` (the model the OS reports: one instruction set runs at different
//! rates on different generations), `isa` (the widest f64 instruction set the CPU reports:
//! `avx512f`, `avx2+fma`, or `sse2`), `gemm_isa` (the one the crate's packed gemm runs:
//! `private-gemm-x86`'s `avx512f` or `avx2+fma` kernels, else `gemm-f64`'s, reported as
//! `portable`), `flops_per_cycle` per core at `isa` (two FMA ports × lanes × 2: 32, 16, or 4 for
//! SSE2's separate add and multiply; a core with one AVX-512 FMA port does half), `ghz` (the clock
//! measured now by a chain of dependent integer additions, one per cycle), `peak_gflops_per_core`
//! = their product, `threads`, `openblas` (the library the reference dgemm came from, or
//! `null` when no `libopenblas.so.0` could be loaded: `apt-get install libopenblas0` on Debian)
//! and `openblas_core` (the kernels it runs: those of `isa` unless `OPENBLAS_CORETYPE` was set, see
//! `openblas::OpenBlas::load`).
//!
//! A case: `method`, `n`, `m`, `d`, `threads`, `seconds_median` with `seconds_min` and
//! `seconds_max` (the fastest and slowest repetition: their spread is the run's noise, ±15 % on
//! a VM whose other tenants share the memory and the last-level cache), `flops`, `gflops` (at the
//! median), `gemm_gflops` (the crate's own gemm), `openblas_gflops` (or `null`),
//! `best_gemm_gflops` (the larger), `efficiency` (= gflops / best_gemm_gflops, the figure the
//! README quotes), `of_own_gemm` (= gflops / gemm_gflops), `of_openblas`, and `of_peak`
//! (= gflops / (peak × threads)).
//!
//! Flop counts are fixed definitions, so the figure cannot be flattered:
//! - SSGP: 12·n·m² = 3·n·(2m)²: the symmetric rank-2m product ΦᵀΦ and the two triangular solves
//!   for ΦA⁻¹ that the gradient needs (trig, the phases and O(m³) terms not counted);
//! - FITC: 7·n·m², the count of its gemms and triangular solves (V = L_u⁻¹K_uf, the Woodbury
//!   product VΛ⁻¹Vᵀ, and the solves and product of the gradient; kernels and O(nmD) terms not
//!   counted), see `src/inducing/mod.rs`;
//! - VFE: 7·n·m², FITC's count: the same factorisation and gradient with Λ = σn²I (the trace
//!   term is the O(nm) column norms of V, not counted);
//! - full GP: n³ (Cholesky n³/3, triangular inverse n³/3, L⁻ᵀL⁻¹ n³/3: the leading terms);
//! - the dgemm references (the crate's own packed gemm, `linalg::tr_mul_to`, and OpenBLAS's `cblas_dgemm`, loaded
//!   at run time so that neither the crate nor its tests link it), with the same thread count, at
//!   shape (2m×n)·(n×2m) for SSGP, (m×n)·(n×m) for FITC and VFE, and (n×n)·(n×512) for the full
//!   GP (its kernels are square).

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ssgp::linalg::{tr_mul_to, Par};
use ssgp::optim::Objective;
use ssgp::ssgp::{Ssgp, SsgpHyperparameters};
use ssgp::{Dataset, Fitc, FullGp, Hyperparameters, ParamGuard, Vfe};
use std::time::Instant;

fn median_seconds(reps: usize, f: impl FnMut()) -> f64 {
    Timing::of(reps, f).median
}

/// A case's repetitions: the median, and the fastest and slowest (on a VM whose other tenants
/// take the memory bandwidth and the shared cache, their spread says how far one median can be
/// trusted).
struct Timing {
    median: f64,
    min: f64,
    max: f64,
}

impl Timing {
    /// The times of `reps` calls of `f` after one unmeasured call.
    fn of(reps: usize, mut f: impl FnMut()) -> Self {
        f();
        let mut times: Vec<f64> = (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        Self {
            median: times[times.len() / 2],
            min: times[0],
            max: times[times.len() - 1],
        }
    }
}

/// Rate (GFLOP/s) of the crate's packed gemm at (k×n)·(n×r), as used for ΦᵀΦ when r = k.
fn gemm_gflops(n: usize, k: usize, r: usize, threads: usize, reps: usize) -> f64 {
    let a = DMatrix::<f64>::from_fn(n, k, |i, j| ((i * 31 + j * 17) % 97) as f64 / 97.0);
    let b = DMatrix::<f64>::from_fn(n, r, |i, j| ((i * 13 + j * 7) % 89) as f64 / 89.0);
    let mut c = DMatrix::<f64>::zeros(k, r);
    let par = Par::rayon(threads);
    let secs = median_seconds(reps, || {
        tr_mul_to(&a, &b, &mut c, par).expect("shapes agree");
    });
    2.0 * n as f64 * (k * r) as f64 / secs / 1e9
}

/// The reference dgemm of OpenBLAS, loaded at run time (`dlopen`) so that the crate, its tests
/// and this bench build and run without it.
mod openblas {
    use std::ffi::{c_char, c_int, c_void, CStr};

    /// `cblas_dgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
    type Dgemm = unsafe extern "C" fn(
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
        f64,
        *const f64,
        c_int,
        *const f64,
        c_int,
        f64,
        *mut f64,
        c_int,
    );
    type SetThreads = unsafe extern "C" fn(c_int);
    type CoreName = unsafe extern "C" fn() -> *const c_char;

    extern "C" {
        fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }

    /// The library's dgemm and thread setter.
    pub struct OpenBlas {
        pub name: &'static str,
        /// The kernels the library runs (`openblas_get_corename`), when it says.
        pub core: Option<String>,
        dgemm: Dgemm,
        set_threads: SetThreads,
    }

    const COL_MAJOR: c_int = 102;
    const NO_TRANS: c_int = 111;
    const TRANS: c_int = 112;
    const RTLD_NOW: c_int = 2;

    impl OpenBlas {
        /// The first of Debian's names that loads and has both symbols. Unless the caller set
        /// `OPENBLAS_CORETYPE`, it is set first to the kernels of the CPU's instruction set `isa`
        /// (`SkylakeX` for `avx512f`, `Haswell` for `avx2+fma`): a `DYNAMIC_ARCH` build falls
        /// back to its SSE3 `Prescott` kernels on a CPU model it does not know — Debian 12's
        /// OpenBLAS 0.3.21 on an Emerald Rapids core (family 6 model 207) ran dgemm at 15 GFLOP/s
        /// there, and at 56–65 with `SkylakeX`'s, which are its kernels for every AVX-512 core.
        pub fn load(isa: &str) -> Option<Self> {
            let kernels = match isa {
                "avx512f" => Some("SkylakeX"),
                "avx2+fma" => Some("Haswell"),
                _ => None,
            };
            if let (None, Some(kernels)) = (std::env::var_os("OPENBLAS_CORETYPE"), kernels) {
                // Before the library is loaded: it reads the variable once, when it starts.
                std::env::set_var("OPENBLAS_CORETYPE", kernels);
            }
            for name in ["libopenblas.so.0", "libopenblas.so"] {
                let file = format!("{name}\0");
                let lib_name = CStr::from_bytes_with_nul(file.as_bytes()).ok()?;
                // SAFETY: a NUL-terminated name; a null handle is checked below.
                let handle = unsafe { dlopen(lib_name.as_ptr(), RTLD_NOW) };
                if handle.is_null() {
                    continue;
                }
                // SAFETY: a live handle and NUL-terminated symbol names; null is checked.
                let (dgemm, set_threads, core_name) = unsafe {
                    (
                        dlsym(handle, c"cblas_dgemm".as_ptr()),
                        dlsym(handle, c"openblas_set_num_threads".as_ptr()),
                        dlsym(handle, c"openblas_get_corename".as_ptr()),
                    )
                };
                if dgemm.is_null() || set_threads.is_null() {
                    continue;
                }
                // SAFETY: a non-null `openblas_get_corename` returns a static NUL-terminated name.
                let core = (!core_name.is_null()).then(|| unsafe {
                    let core_name = std::mem::transmute::<*mut c_void, CoreName>(core_name);
                    CStr::from_ptr(core_name()).to_string_lossy().into_owned()
                });
                // SAFETY: the symbols have these C signatures in every OpenBLAS (LP64 build,
                // 32-bit `blasint`, as Debian ships it).
                return Some(unsafe {
                    Self {
                        name,
                        core,
                        dgemm: std::mem::transmute::<*mut c_void, Dgemm>(dgemm),
                        set_threads: std::mem::transmute::<*mut c_void, SetThreads>(set_threads),
                    }
                });
            }
            None
        }

        /// C (k×r) = AᵀB for column-major A (n×k) and B (n×r), on `threads` threads.
        pub fn at_b(
            &self,
            a: &[f64],
            b: &[f64],
            c: &mut [f64],
            (n, k, r): (usize, usize, usize),
            threads: usize,
        ) {
            assert!(a.len() == n * k && b.len() == n * r && c.len() == k * r);
            let dim = |v: usize| c_int::try_from(v).expect("dimension fits a C int");
            // SAFETY: the slices have the sizes the column-major leading dimensions say.
            unsafe {
                (self.set_threads)(dim(threads));
                (self.dgemm)(
                    COL_MAJOR,
                    TRANS,
                    NO_TRANS,
                    dim(k),
                    dim(r),
                    dim(n),
                    1.0,
                    a.as_ptr(),
                    dim(n),
                    b.as_ptr(),
                    dim(n),
                    0.0,
                    c.as_mut_ptr(),
                    dim(k),
                );
            }
        }
    }
}

/// OpenBLAS's dgemm rate (GFLOP/s) at (k×n)·(n×r), on the same operands as [`gemm_gflops`].
fn openblas_gflops(
    blas: &openblas::OpenBlas,
    n: usize,
    k: usize,
    r: usize,
    threads: usize,
    reps: usize,
) -> f64 {
    let a: Vec<f64> = (0..n * k)
        .map(|t| ((t % n * 31 + t / n * 17) % 97) as f64 / 97.0)
        .collect();
    let b: Vec<f64> = (0..n * r)
        .map(|t| ((t % n * 13 + t / n * 7) % 89) as f64 / 89.0)
        .collect();
    let mut c = vec![0.0; k * r];
    let secs = median_seconds(reps, || blas.at_b(&a, &b, &mut c, (n, k, r), threads));
    2.0 * n as f64 * (k * r) as f64 / secs / 1e9
}

/// The f64 instruction sets this core runs: the widest the CPU reports with its flops per cycle
/// per core (two FMA ports × f64 lanes × 2 flops; SSE2 without FMA: one add and one multiply of 2
/// lanes), and the one the crate's packed gemm runs (`src/linalg/gemm.rs` chooses it the same
/// way).
fn instruction_sets() -> (&'static str, f64, &'static str) {
    #[cfg(target_arch = "x86_64")]
    {
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        if is_x86_feature_detected!("avx512f") {
            return ("avx512f", 32.0, "avx512f");
        }
        if avx2 {
            return ("avx2+fma", 16.0, "avx2+fma");
        }
        ("sse2", 4.0, "portable")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ("unknown", f64::NAN, "portable")
    }
}

/// The CPU as the OS reports it (Linux's `/proc/cpuinfo`: its name, vendor, family and model of
/// the first core; `unknown` elsewhere): the same instruction set runs at different rates on
/// different generations, so a figure is quoted with the CPU it was measured on.
fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| "?".into())
    };
    if info.is_empty() {
        return "unknown".into();
    }
    format!(
        "{} ({} family {} model {})",
        field("model name"),
        field("vendor_id"),
        field("cpu family"),
        field("model")
    )
}

/// The core's clock now (GHz), from a chain of dependent register-to-register integer additions
/// (one cycle each on every x86-64 core): the median of 7 timings of 2·10⁸ additions. Not
/// `add reg, imm`: Golden Cove and later Intel cores fold chains of immediate additions at
/// register renaming, several per cycle (measured 9.0 "GHz" on a 2.9 GHz Emerald Rapids core,
/// where register additions and 3-cycle `imul` chains both gave 2.9).
fn measured_ghz() -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        const ROUNDS: u64 = 10_000_000;
        let secs = median_seconds(7, || {
            let (mut x, one): (u64, u64) = (0, std::hint::black_box(1));
            for _ in 0..ROUNDS {
                // SAFETY: register-only additions, no memory, stack or flags contract broken.
                unsafe {
                    std::arch::asm!(
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                        x = inout(reg) x,
                        one = in(reg) one,
                        options(nomem, nostack),
                    );
                }
            }
            std::hint::black_box(x);
        });
        20.0 * ROUNDS as f64 / secs / 1e9
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        f64::NAN
    }
}

/// The two dgemm references at one shape: the crate's own and, when loaded, OpenBLAS's.
struct Gemm {
    own: f64,
    openblas: Option<f64>,
}

impl Gemm {
    fn measure(
        blas: Option<&openblas::OpenBlas>,
        (n, k, r): (usize, usize, usize),
        threads: usize,
        reps: usize,
    ) -> Self {
        Self {
            own: gemm_gflops(n, k, r, threads, reps),
            openblas: blas.map(|b| openblas_gflops(b, n, k, r, threads, reps)),
        }
    }

    fn best(&self) -> f64 {
        self.openblas.map_or(self.own, |o| o.max(self.own))
    }
}

fn random_data(n: usize, d: usize, rng: &mut StdRng) -> Dataset {
    let x = DMatrix::from_fn(n, d, |_, _| rng.random_range(-1.7..1.7));
    let y = DVector::from_fn(n, |i, _| f64::sin(x.row(i).sum()));
    Dataset::new(x, y).expect("finite data")
}

/// What every case line holds besides its rates.
struct Case<'a> {
    method: &'a str,
    n: usize,
    m: usize,
    d: usize,
    threads: usize,
}

impl Case<'_> {
    /// Prints the case's JSON line: its rate at `flops` in the median of `time`, against both
    /// dgemms and the peak of its `threads` cores, and the spread of its repetitions.
    fn emit(&self, time: &Timing, flops: f64, gemm: &Gemm, peak_per_core: f64) {
        let gflops = flops / time.median / 1e9;
        let line = serde_json::json!({
            "method": self.method,
            "n": self.n,
            "m": self.m,
            "d": self.d,
            "threads": self.threads,
            "seconds_median": time.median,
            "seconds_min": time.min,
            "seconds_max": time.max,
            "flops": flops,
            "gflops": gflops,
            "gemm_gflops": gemm.own,
            "openblas_gflops": gemm.openblas,
            "best_gemm_gflops": gemm.best(),
            "efficiency": gflops / gemm.best(),
            "of_own_gemm": gflops / gemm.own,
            "of_openblas": gemm.openblas.map(|o| gflops / o),
            "of_peak": gflops / (peak_per_core * self.threads as f64),
        });
        println!("{line}");
    }
}

/// θ for an inducing-point objective (FITC, VFE): unit lengthscales and σ0, σn² = 0.1, the
/// inducing inputs spread over the training rows.
fn inducing_theta(data: &Dataset, m: usize) -> DVector<f64> {
    let (n, d) = (data.len(), data.dim());
    let mut theta = DVector::zeros(d + 2 + m * d);
    theta[d + 1] = 0.5 * 0.1f64.ln();
    for (j, v) in theta.rows_mut(d + 2, m * d).iter_mut().enumerate() {
        *v = data.x()[((j % m) * 37 % n, j / m)];
    }
    theta
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = args
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| args.get(i + 1))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(rayon::current_num_threads);
    let quick = args.iter().any(|a| a == "--quick");
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let only = value_of("--only");
    let runs = |method: &str| {
        only.as_ref()
            .is_none_or(|o| o.split(',').any(|x| x == method))
    };
    let sizes: Vec<usize> = value_of("--m").map_or(vec![50, 100, 250, 375], |s| {
        s.split(',')
            .map(|v| {
                v.parse()
                    .expect("--m takes a comma-separated list of sizes")
            })
            .collect()
    });
    let reps = if quick { 3 } else { 7 };
    let (isa, flops_per_cycle, gemm_isa) = instruction_sets();
    let blas = openblas::OpenBlas::load(isa);
    let ghz = measured_ghz();
    let peak = flops_per_cycle * ghz;
    println!(
        "{}",
        serde_json::json!({
            "machine": {
                "cpu": cpu_model(),
                "isa": isa,
                "gemm_isa": gemm_isa,
                "flops_per_cycle": flops_per_cycle,
                "ghz": ghz,
                "peak_gflops_per_core": peak,
                "threads": threads,
                "openblas": blas.as_ref().map(|b| b.name),
                "openblas_core": blas.as_ref().and_then(|b| b.core.clone()),
            }
        })
    );
    let mut rng = StdRng::seed_from_u64(0);
    let (n, d) = (10_000, 8);
    let data = random_data(n, d, &mut rng);
    let case = |method, m| Case {
        method,
        n,
        m,
        d,
        threads,
    };
    for &m in sizes.iter().filter(|_| runs("ssgp")) {
        let params = Ssgp::params(m).threads(threads).check().expect("valid");
        let objective = params.evidence(&data).expect("valid");
        let hyper = SsgpHyperparameters {
            hyper: Hyperparameters {
                lengthscales: DVector::from_element(d, 1.0),
                signal_variance: 1.0,
                noise_variance: 0.1,
            },
            unit_frequencies: DMatrix::from_fn(m, d, |_, _| rng.random_range(-2.0..2.0)),
        };
        let theta = objective.pack(&hyper).expect("valid");
        let time = Timing::of(reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = Gemm::measure(blas.as_ref(), (n, 2 * m, 2 * m), threads, reps);
        case("ssgp", m).emit(&time, 12.0 * n as f64 * (m * m) as f64, &gemm, peak);
    }
    for &m in sizes.iter().filter(|_| runs("fitc") || runs("vfe")) {
        let theta = inducing_theta(&data, m);
        let gemm = Gemm::measure(blas.as_ref(), (n, m, m), threads, reps);
        if runs("fitc") {
            let fitc = Fitc::params(m).threads(threads).check().expect("valid");
            let objective = fitc.evidence(&data).expect("valid");
            let time = Timing::of(reps, || {
                objective.value_and_gradient(&theta).expect("evaluates");
            });
            case("fitc", m).emit(&time, 7.0 * n as f64 * (m * m) as f64, &gemm, peak);
        }
        if runs("vfe") {
            let vfe = Vfe::params(m).threads(threads).check().expect("valid");
            let objective = vfe.evidence(&data).expect("valid");
            let time = Timing::of(reps, || {
                objective.value_and_gradient(&theta).expect("evaluates");
            });
            case("vfe", m).emit(&time, 7.0 * n as f64 * (m * m) as f64, &gemm, peak);
        }
    }
    let full_sizes: &[usize] = match (runs("full"), quick) {
        (false, _) => &[],
        (true, true) => &[2000],
        (true, false) => &[2000, 5000, 10000],
    };
    for &nf in full_sizes {
        let sub = random_data(nf, d, &mut rng);
        let params = FullGp::params().threads(threads).check().expect("valid");
        let objective = params.evidence(&sub).expect("valid");
        let mut theta = DVector::zeros(d + 2);
        theta[d + 1] = 0.5 * 0.1f64.ln();
        let full_reps = if nf >= 10_000 { 1 } else { reps.min(3) };
        let time = Timing::of(full_reps, || {
            objective.value_and_gradient(&theta).expect("evaluates");
        });
        let gemm = Gemm::measure(blas.as_ref(), (nf, nf, 512), threads, 3);
        Case {
            method: "full",
            n: nf,
            m: 0,
            d,
            threads,
        }
        .emit(&time, (nf as f64).powi(3), &gemm, peak);
    }
}
