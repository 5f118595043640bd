//! SSGP's evidence against the original MATLAB code (`ssgpr.m`) on Kin-40k, m = 100.
//!
//! The values in `tests/data/reference/` were computed by the unmodified original code at fixed
//! parameters on all 10000 Kin-40k training rows; its parameter layout is ours
//! ([log ℓ, log σ0, log σn, vec(W)], see `tests/data/reference/README.md`).

use crate::common::{kin40k_train, read_numbers};
use nalgebra::DVector;
use ssgp::optim::Objective;
use ssgp::{ParamGuard, Ssgp};

#[test]
fn ssgp_evidence_and_gradient_match_original_code() {
    let data = kin40k_train();
    assert_eq!((data.len(), data.dim()), (10000, 8));
    let theta = DVector::from_vec(read_numbers(
        "tests/data/reference/ssgp_kin40k_m100_params.csv",
    ));
    let expected = DVector::from_vec(read_numbers(
        "tests/data/reference/ssgp_kin40k_m100_nlml_grad.csv",
    ));
    assert_eq!(theta.len(), 810);
    assert_eq!(expected.len(), 811);
    // The cached, the partly cached (3 chunks of 1000 rows kept) and the streaming (Φ recomputed
    // per chunk) paths, in odd-sized chunks.
    for (chunk, cache) in [(4096, usize::MAX), (1000, 3 * 1000 * 200 * 8), (777, 0)] {
        let params = Ssgp::params(100)
            .relative_noise_floor(0.0)
            .chunk_rows(chunk)
            .cache_bytes(cache)
            .check()
            .unwrap();
        let evidence = params.evidence(&data).unwrap();
        let (value, grad) = evidence.value_and_gradient(&theta).unwrap();
        let rel = (value - expected[0]).abs() / expected[0].abs();
        let g_ref = expected.rows(1, 810);
        let scale = g_ref.amax();
        let g_err = (&grad - g_ref).amax() / scale;
        println!(
            "chunk {chunk}: nlml {value:.12} vs {:.12}: rel {rel:.2e}; gradient rel {g_err:.2e}",
            expected[0]
        );
        assert!(rel <= 1e-10, "evidence rel error {rel:e}");
        assert!(g_err <= 1e-10, "gradient rel error {g_err:e}");
        assert_eq!(evidence.value(&theta).unwrap(), value);
    }
}
